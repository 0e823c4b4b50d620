// Pieces of a generation step shared by the in-RAM generator and the pipeline, so both compute
// exactly the same thing (the pipeline's invariance tests rely on it). They name no family: the
// model computes projections and the rest of a layer, the engine computes attention over the KV
// slots and applies the eviction rule.
#pragma once

#include "engine/kv_slots.h"
#include "models/decoder_model.h"
#include "policy/kv_policy.h"

namespace h2oflex {

// A whole layer over a left-padded prompt: hidden [b * s, H] in place; k and v
// [b, s, kv_heads, d] receive the keys and values to cache; `stat` [b, kv_heads, s] (given iff
// the rule uses attention scores) the rule's prefill statistic that ranks prompt tokens: the
// column sums of attention (H2O, TOVA) or the pooled attention of the last queries (SnapKV).
void prefill_layer(const DecoderModel& model, const UnitWeights& w, ops::ComputeType ct,
                   Tensor& hidden, int64_t batch, int64_t seq, const std::vector<int32_t>& pad,
                   const Tensor& positions, Tensor& k, Tensor& v, const KvRule& rule, Tensor* stat);

// One decoder layer for one new token per sequence at padded `position` (real positions in
// `positions` [b] i32): projections, attention over the retained slots plus the token, the
// eviction rule's choice of slot, and the rest of the layer. `hidden` [b, H] is updated in
// place; returns the slots that changed (to write back).
ChangedSlots decode_layer(const DecoderModel& model, const UnitWeights& w, ops::ComputeType ct,
                          const KvRule& rule, int32_t position, const Tensor& positions,
                          Tensor& hidden, KvSlots& slots);

// Row (i + 1) * seq - 1 of hidden [batch * seq, H] for each sequence i: the state the next token
// is predicted from (left padding puts every sequence's last token in the last column).
Tensor last_positions(const Tensor& hidden, int64_t batch, int64_t seq);

}  // namespace h2oflex
