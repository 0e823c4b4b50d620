// One pipeline stage's part of a model, as the cost model and the memory plan see it: a
// ModelShape whose layers, tensors and embedding / head terms are only the stage's
// (runtime/dist/stage_plan.h says which units a stage runs).
#pragma once

#include "policy/cost_model.h"
#include "runtime/dist/stage_plan.h"

namespace h2oflex::policy {

// A stage's footprint and how its tensors and units map to the model's. Unit convention as the
// model's: unit 0 the embedding, 1..L the stage's layers, L + 1 the head; the embedding and head
// units are empty on a stage that does not hold them.
struct StageFootprint {
  ModelFootprint footprint;
  std::vector<size_t> model_tensor;  // per stage tensor: the model's tensor index
  std::vector<int> model_unit;       // per stage unit: the model's unit, -1 for an empty one
  bool has_embedding = false, has_head = false;
};

// The part of `full` (a model's footprint: units embedding, layers, head) that stage `units`
// holds. Throws InputError when `units` is not a stage of the model.
StageFootprint stage_footprint(const ModelFootprint& full, const StageRange& units);

// The shape of stage `units` of `model`: its footprint is stage_footprint's, so per-layer terms
// read a decoder layer at unit 1 on every stage. A tensor two of the stage's units use (a head tied
// to the token embedding) is counted once. The embedding terms (other_param_count) go to the first
// and the last stage (the lookup and a tied head both need the token table), the LM head's compute
// (head_param_count) to the last. Throws InputError when `units` is not a stage of the model.
ModelShape stage_model_shape(const ModelShape& model, const StageRange& units);

}  // namespace h2oflex::policy
