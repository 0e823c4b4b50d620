// What `run` prints after its runs: each run's summary (FlexGen's lines) and, for a config with
// variants, the variants side by side (KV kept, KV traffic, peak memory, throughput).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace h2oflex {

// `r`: a run's result document (run_experiment_config).
void print_summary(const nlohmann::json& r);
void print_comparison(const std::vector<nlohmann::json>& results);

}  // namespace h2oflex
