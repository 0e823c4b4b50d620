// `h2oflex experiment SUITE.yaml --out DIR [--predict]`: for each row of a suite, the cost
// model's prediction and (unless --predict) a measured run, next to the published number.
// Writes DIR/table.md, DIR/table.csv, DIR/results.json and DIR/throughput.png.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "experiments/suite/experiment_suite.h"
#include "experiments/suite/machine_fit.h"
#include "experiments/suite/result_row.h"
#include "experiments/suite/suite_plot.h"
#include "experiments/suite/suite_results.h"

namespace h2oflex {

struct ExperimentOptions {
  std::string suite_path;
  std::string out_dir;
  bool predict = false;  // evaluate the cost model only; run nothing
};

// Evaluates every row; never throws for a row that cannot run (it is skipped with a reason),
// but does for a bad suite. Returns 0 on success.
int run_experiment(const ExperimentOptions& options, const MeasureFn& measure);

// One piece, exposed for tests.
std::vector<ResultRow> evaluate_suite(const Suite& suite, bool predict_only,
                                      const MeasureFn& measure);
}  // namespace h2oflex
