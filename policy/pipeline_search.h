// The policy for a pipeline of S stages (pipeline_cost.h): one batch shape and placement that
// every stage runs (the blocks flow through all of them), chosen for the pipeline's throughput
// within every stage's memory.
//
// Each stage's own best policy (search_policy on its part of the model, on its machine) is a
// candidate; each candidate is then costed on every stage, and the fastest one that fits them
// all wins. With equal machines the binding stage is the one with the most bytes (the last: its
// layers plus the LM head), whose best policy is among the candidates.
#pragma once

#include <string>
#include <vector>

#include "policy/pipeline_cost.h"
#include "policy/search.h"

namespace h2oflex::policy {

struct PipelineSearchResult {
  bool found = false;
  Policy policy;
  PipelineEstimate estimate;
  long evaluated = 0;   // policies the stage searches estimated
  std::string why_not;  // when !found
};

PipelineSearchResult search_pipeline_policy(const ModelShape& model,
                                            const std::vector<HardwareProfile>& stage_hw,
                                            const Workload& w, const HardwareLimits& limits = {},
                                            const SearchOptions& opt = {});

}  // namespace h2oflex::policy
