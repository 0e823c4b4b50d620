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

namespace h2oflex {

struct ExperimentOptions {
  std::string suite_path;
  std::string out_dir;
  bool predict = false;  // evaluate the cost model only; run nothing
};

// What a measured run reports (throughputs in FlexGen's definitions, tokens/s).
struct MeasuredRow {
  double total_tok_s = 0, decode_tok_s = 0, prefill_tok_s = 0;
  bool projected = false;   // timed a few decode steps and extrapolated
  std::string skip_reason;  // non-empty: the row was not run, and why
  nlohmann::json details;   // optional: the run's own result document
};

// Runs one row's run-config fragment (model, prompt_len, gen_len, policy, kv, hardware, ...).
// `policy: auto` has already been replaced by the planned policy.
using MeasureFn = std::function<MeasuredRow(const YAML::Node& row_config)>;

// One row of the output table.
struct ResultRow {
  const SuiteRow* row = nullptr;
  std::string batch, policy;  // as shown in the table
  std::optional<double> predicted, measured;
  std::optional<policy::CostEstimate> estimate;
  std::optional<MeasuredRow> measurement;  // the run whose total is the median
  std::vector<double> measured_runs;       // total tok/s of every run (suite `repeats`)
  std::string note;                        // why a number is missing
  std::optional<double> versus_ratio;      // measured / the fastest `versus` row's measured
  std::string versus_label;                // that row's label
  // ratio = (measured, else predicted) / (published, else predicted); empty if either is absent
  // or both would be the same prediction.
  std::optional<double> ratio() const;
  // Within the row's band: predicted/published for --predict, measured/predicted otherwise.
  std::optional<bool> within_band() const;
};

// Evaluates every row; never throws for a row that cannot run (it is skipped with a reason),
// but does for a bad suite. Returns 0 on success.
int run_experiment(const ExperimentOptions& options, const MeasureFn& measure);

// Pieces, exposed for tests.
std::vector<ResultRow> evaluate_suite(const Suite& suite, bool predict_only,
                                      const MeasureFn& measure);
std::string results_csv(const std::vector<ResultRow>& rows);
std::string results_markdown(const Suite& suite, const std::vector<ResultRow>& rows,
                             bool predict_only);
nlohmann::json results_json(const Suite& suite, const std::vector<ResultRow>& rows,
                            bool predict_only);
// Writes a PNG with python3 + matplotlib; returns "" or why no plot was made.
std::string write_plot(const std::string& results_json_path, const std::string& png_path);
// The same with another matplotlib script (`script` is its text, written beside the results as
// `script_name` so the plot can be redrawn by hand).
std::string write_plot_with(const char* script, const std::string& script_name,
                            const std::string& results_json_path, const std::string& png_path);

// Bytes of an offload layout that a run of the row config `config` would reuse under disk_path
// (empty: the disk tier's default), 0 when there is none. The engine counts only what a layout
// lacks as new (WeightStream::check_disk_room), and so must the suite's check. With
// compute_dtype auto the matrix type is chosen by measuring when the run starts: the largest of
// the model's layouts counts (should the run need another, the engine refuses before writing).
uint64_t reusable_layout_bytes(const YAML::Node& config, const std::string& disk_path,
                               bool compress);

// Why this machine cannot run a row ("" if it can), from the profile and the estimate, where
// `reusable_disk` bytes of the estimate's disk are already there (reusable_layout_bytes).
std::string machine_skip_reason(const policy::HardwareProfile& hw,
                                const policy::CostEstimate* estimate,
                                const policy::HardwareLimits& limits, uint64_t reusable_disk);

}  // namespace h2oflex
