// `h2oflex run CONFIG.yaml`: one throughput experiment, summarized FlexGen-style and as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "experiments/run_config.h"

namespace h2oflex {

struct RunOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string json_out;                // --json OUT.json ("" = none)
};

// Runs a parsed config and returns the result document (also printed as the five summary lines).
nlohmann::json run_experiment_config(const RunConfig& config);

int run_command(const RunOptions& options);

// Hex SHA-256 of the generated ids (one list per sequence), for comparing runs for equality.
std::string tokens_sha256(const std::vector<std::vector<int32_t>>& tokens);

}  // namespace h2oflex
