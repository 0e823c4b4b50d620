// `h2oflex run CONFIG.yaml`: one throughput experiment, summarized FlexGen-style and as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "experiments/common/run_config.h"

namespace h2oflex {

struct RunOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string json_out;                // --json OUT.json ("" = none)
  bool plan_only = false;              // --plan-only: the memory plan and prediction, no run
};

// Runs a parsed config and returns the result document (also printed as the five summary lines).
// With `plan_only` (a run with a policy), the memory plan checked against the budgets and the
// cost model's prediction, without loading or running anything.
nlohmann::json run_experiment_config(const RunConfig& config, bool plan_only = false);

int run_command(const RunOptions& options);

// Hex SHA-256 of the generated ids (one list per sequence), for comparing runs for equality.
std::string tokens_sha256(const std::vector<std::vector<int32_t>>& tokens);

}  // namespace h2oflex
