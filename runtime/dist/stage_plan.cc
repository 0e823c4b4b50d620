#include "runtime/dist/stage_plan.h"

#include "runtime/core/error.h"

namespace h2oflex {

std::vector<StageRange> plan_stages(size_t units, size_t stages) {
  H2OFLEX_INPUT_CHECK(stages >= 1, "pipeline stages: ", stages, " requested, at least 1 needed");
  H2OFLEX_INPUT_CHECK(units >= 2, "pipeline stages: the model has ", units,
                      " units, but an embedding and a head (2 units) are needed");
  const size_t layers = units - 2;
  H2OFLEX_INPUT_CHECK(stages <= layers, "pipeline stages: ", stages,
                      " stages requested, but the model has only ", layers,
                      " decoder layers (each stage needs at least one)");
  std::vector<StageRange> plan(stages);
  const size_t base = layers / stages;
  const size_t extra = layers % stages;
  size_t next = 1;  // the first decoder layer; the embedding (unit 0) joins stage 0
  for (size_t s = 0; s < stages; ++s) {
    plan[s].begin = s == 0 ? 0 : next;
    next += base + (s < extra ? 1 : 0);
    plan[s].end = next;
  }
  plan.back().end = units;  // the head (unit units-1) joins the last stage
  return plan;
}

}  // namespace h2oflex
