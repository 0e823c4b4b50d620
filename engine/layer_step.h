// Pieces of a generation step shared by the in-RAM generator and the pipeline, so both compute
// exactly the same thing (the pipeline's invariance tests rely on it).
#pragma once

#include "engine/kv_slots.h"
#include "models/opt/opt_layers.h"
#include "policy/kv_policy.h"

namespace h2oflex {

// One decoder layer for one new token per sequence at padded `position`: projections, attention
// over the retained slots plus the token, the eviction rule's choice of slot, and the rest of the
// layer. `hidden` [b, H] is updated in place; returns the slots that changed (to write back).
ChangedSlots decode_layer(const OptConfig& cfg, const OptLayerWeights& w, ops::ComputeType ct,
                          const KvRule& rule, int32_t position, Tensor& hidden, KvSlots& slots);

// Row (i + 1) * seq - 1 of hidden [batch * seq, H] for each sequence i: the state the next token
// is predicted from (left padding puts every sequence's last token in the last column).
Tensor last_positions(const Tensor& hidden, int64_t batch, int64_t seq);

}  // namespace h2oflex
