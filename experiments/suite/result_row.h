// A suite row's outcome: what a measured run reports, and the row as the output table shows it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/suite/experiment_suite.h"

namespace h2oflex {

// What a measured run reports (throughputs in FlexGen's definitions, tokens/s).
struct MeasuredRow {
  double total_tok_s = 0, decode_tok_s = 0, prefill_tok_s = 0;
  bool projected = false;   // timed a few decode steps and extrapolated
  std::string skip_reason;  // non-empty: the row was not run, and why
  std::string note;         // a remark for the table (e.g. the page cache could not be dropped)
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

}  // namespace h2oflex
