// One pipeline stage's part of a model, as the cost model and the memory plan see it: a
// ModelShape whose layers, tensors and embedding / head terms are only the stage's
// (runtime/dist/stage_plan.h says which units a stage runs).
#pragma once

#include "policy/cost_model.h"
#include "runtime/dist/stage_plan.h"

namespace h2oflex::policy {

// The shape of stage `units` of `model`. Its footprint keeps the engine's unit convention (unit 0
// the embedding, then the layers, then the head), with an empty embedding unit on a stage that
// does not hold it and an empty head unit likewise, so per-layer terms read a decoder layer at
// unit 1 on every stage. A tensor two of the stage's units use (a head tied to the token
// embedding) is counted once. The embedding terms (other_param_count) go to the first and the
// last stage (the lookup and a tied head both need the token table), the LM head's compute
// (head_param_count) to the last. Throws InputError when `units` is not a stage of the model.
ModelShape stage_model_shape(const ModelShape& model, const StageRange& units);

}  // namespace h2oflex::policy
