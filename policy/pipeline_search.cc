#include "policy/pipeline_search.h"

#include "policy/stage_shape.h"
#include "runtime/core/error.h"

namespace h2oflex::policy {

PipelineSearchResult search_pipeline_policy(const ModelShape& model,
                                            const std::vector<HardwareProfile>& stage_hw,
                                            const Workload& w, const HardwareLimits& limits,
                                            const SearchOptions& opt) {
  const std::vector<StageRange> ranges =
      plan_stages(static_cast<size_t>(model.layers) + 2, stage_hw.size());
  std::vector<Policy> candidates;
  PipelineSearchResult r;
  for (size_t j = 0; j < ranges.size(); ++j) {
    const SearchResult s =
        search_policy(stage_model_shape(model, ranges[j]), stage_hw[j], w, limits, opt);
    r.evaluated += s.evaluated;
    if (!s.found) {
      r.why_not = detail::concat("stage ", j, " (units ", ranges[j].begin, "-", ranges[j].end - 1,
                                 "): ", s.why_not);
      return r;
    }
    candidates.push_back(s.policy);
  }
  for (const Policy& p : candidates) {
    PipelineEstimate e = estimate_pipeline(model, stage_hw, p, w, limits, opt.decode_context);
    if (!e.fits()) {
      if (r.why_not.empty()) {
        for (size_t j = 0; j < e.stages.size(); ++j) {
          if (e.stages[j].memory_problem.empty()) continue;
          r.why_not = detail::concat(
              "the stages' best policies do not all fit every stage; e.g. "
              "stage ",
              j, ": ", e.stages[j].memory_problem);
          break;
        }
      }
      continue;
    }
    if (!r.found || e.total_tok_s > r.estimate.total_tok_s) {
      r.found = true;
      r.policy = p;
      r.estimate = std::move(e);
    }
  }
  if (r.found) r.why_not.clear();
  return r;
}

}  // namespace h2oflex::policy
