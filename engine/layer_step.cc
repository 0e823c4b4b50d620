#include "engine/layer_step.h"

#include "runtime/ops/ops.h"
#include "runtime/ops/scratch.h"

namespace h2oflex {

using ops::Scratch;

void prefill_layer(const DecoderModel& model, const UnitWeights& w, ops::ComputeType ct,
                   Tensor& hidden, int64_t batch, int64_t seq, const std::vector<int32_t>& pad,
                   const Tensor& positions, Tensor& k, Tensor& v, const KvRule& rule,
                   Tensor* stat) {
  const KvGeometry g = model.kv_geometry();
  const int64_t rows = batch * seq, d = g.head_dim;
  const Device dev = hidden.device();
  Tensor q = ops::scratch(Scratch::PrefillQ, {rows, g.query_heads * d}, DType::F32, dev);
  Tensor k2 = k.reshape({rows, g.kv_heads * d});
  Tensor v2 = v.reshape({rows, g.kv_heads * d});
  model.attention_input(w, ct, hidden, positions, q, k2, v2);
  Tensor attn = ops::scratch(Scratch::PrefillAttn, {batch, seq, g.query_heads, d}, DType::F32, dev);
  const Tensor q4 = q.reshape({batch, seq, g.query_heads, d});
  H2OFLEX_CHECK((stat != nullptr) == rule.uses_attention_scores(), "prefill_layer: ", rule.name(),
                stat ? " takes no" : " needs a", " prefill statistic");
  const bool colsum = stat != nullptr && rule.prefill == PrefillStat::ColumnSum;
  ops::attention_prefill(q4, k, v, pad, g.softmax_scale, attn, colsum ? stat : nullptr, ct);
  if (stat != nullptr && rule.prefill == PrefillStat::WindowPooled) {
    ops::window_attention_scores(q4, k, pad, g.softmax_scale, rule.recent, KvRule::kWindowPool,
                                 *stat);
  }
  model.layer_finish(w, ct, hidden, attn.reshape({rows, g.query_heads * d}));
}

ChangedSlots decode_layer(const DecoderModel& model, const UnitWeights& w, ops::ComputeType ct,
                          const KvRule& rule, int32_t position, const Tensor& positions,
                          Tensor& hidden, KvSlots& slots) {
  const KvGeometry g = model.kv_geometry();
  const int64_t b = hidden.dim(0), d = g.head_dim;
  const int64_t heads = g.query_heads, kv_heads = g.kv_heads;
  const Device dev = hidden.device();
  const Shape q_rows{b, heads * d}, kv_rows{b, kv_heads * d};
  const Shape q_heads{b, heads, d}, kv_per_head{b, kv_heads, d};
  Tensor q = ops::scratch(Scratch::DecodeQ, q_rows, DType::F32, dev);
  Tensor k = ops::scratch(Scratch::DecodeK, kv_rows, DType::F32, dev);
  Tensor v = ops::scratch(Scratch::DecodeV, kv_rows, DType::F32, dev);
  Tensor attn = ops::scratch(Scratch::DecodeAttn, q_rows, DType::F32, dev);
  model.attention_input(w, ct, hidden, positions, q, k, v);
  Tensor q3 = q.reshape(q_heads), k3 = k.reshape(kv_per_head), v3 = v.reshape(kv_per_head);
  Tensor a3 = attn.reshape(q_heads);
  // Attention runs where the slots live. When that is not the compute device (a host-resident
  // cache with cpu_cache_compute on a GPU), only the token's q, k, v go there and the attention
  // output comes back — FlexGen's delegation, far fewer bytes than moving the cache.
  const Device kv_dev = slots.k.device();
  const bool delegated = kv_dev != dev;
  if (delegated) {
    Tensor hq = ops::scratch(Scratch::HostQ, q_heads, DType::F32, kv_dev);
    Tensor hk = ops::scratch(Scratch::HostK, kv_per_head, DType::F32, kv_dev);
    Tensor hv = ops::scratch(Scratch::HostV, kv_per_head, DType::F32, kv_dev);
    ops::copy(q3, hq);
    ops::copy(k3, hk);
    ops::copy(v3, hv);
    q3 = hq;
    k3 = hk;
    v3 = hv;
  }
  Tensor out = delegated ? ops::scratch(Scratch::HostAttn, q_heads, DType::F32, kv_dev) : a3;
  // Slot probabilities are only needed where they feed the scores.
  const bool scores = rule.decode_scores();
  Tensor probs, self_prob;
  if (scores) {
    probs = ops::scratch(Scratch::SlotProbs, slots.pos.shape(), DType::F32, kv_dev);
    self_prob = ops::scratch(Scratch::SelfProb, {b, kv_heads}, DType::F32, kv_dev);
  }
  ops::attention_decode(q3, slots.k, slots.v, slots.pos, k3, v3, g.softmax_scale, out,
                        scores ? &probs : nullptr, scores ? &self_prob : nullptr);
  ChangedSlots changed = kv_decode_insert(rule, position, k3, v3, scores ? &probs : nullptr,
                                          scores ? &self_prob : nullptr, slots);
  if (delegated) ops::copy(out, a3);
  model.layer_finish(w, ct, hidden, attn);
  return changed;
}

Tensor last_positions(const Tensor& hidden, int64_t batch, int64_t seq) {
  const int64_t h = hidden.dim(1);
  Tensor last = ops::scratch(Scratch::LastHidden, {batch, h}, DType::F32, hidden.device());
  if (seq == 1) {
    ops::copy(hidden.slice(0, batch), last);
    return last;
  }
  for (int64_t i = 0; i < batch; ++i) {
    Tensor row = last.slice(i, i + 1);
    ops::copy(hidden.slice((i + 1) * seq - 1, (i + 1) * seq), row);
  }
  return last;
}

}  // namespace h2oflex
