#include "engine/layer_step.h"

#include "runtime/ops/scratch.h"

namespace h2oflex {

using ops::Scratch;

ChangedSlots decode_layer(const OptConfig& cfg, const OptLayerWeights& w, ops::ComputeType ct,
                          const KvRule& rule, int32_t position, Tensor& hidden, KvSlots& slots) {
  const int64_t b = hidden.dim(0), heads = cfg.heads, d = cfg.head_dim();
  const Device dev = hidden.device();
  const Shape rows{b, cfg.hidden}, per_head{b, heads, d};
  Tensor q = ops::scratch(Scratch::DecodeQ, rows, DType::F32, dev);
  Tensor k = ops::scratch(Scratch::DecodeK, rows, DType::F32, dev);
  Tensor v = ops::scratch(Scratch::DecodeV, rows, DType::F32, dev);
  Tensor attn = ops::scratch(Scratch::DecodeAttn, rows, DType::F32, dev);
  opt_attention_input(cfg, w, ct, hidden, q, k, v);
  Tensor q3 = q.reshape(per_head), k3 = k.reshape(per_head), v3 = v.reshape(per_head);
  Tensor a3 = attn.reshape(per_head);
  // Attention runs where the slots live. When that is not the compute device (a host-resident
  // cache with cpu_cache_compute on a GPU), only the token's q, k, v go there and the attention
  // output comes back — FlexGen's delegation, far fewer bytes than moving the cache.
  const Device kv_dev = slots.k.device();
  const bool delegated = kv_dev != dev;
  if (delegated) {
    Tensor hq = ops::scratch(Scratch::HostQ, per_head, DType::F32, kv_dev);
    Tensor hk = ops::scratch(Scratch::HostK, per_head, DType::F32, kv_dev);
    Tensor hv = ops::scratch(Scratch::HostV, per_head, DType::F32, kv_dev);
    ops::copy(q3, hq);
    ops::copy(k3, hk);
    ops::copy(v3, hv);
    q3 = hq;
    k3 = hk;
    v3 = hv;
  }
  Tensor out = delegated ? ops::scratch(Scratch::HostAttn, per_head, DType::F32, kv_dev) : a3;
  // Slot probabilities are only needed where they feed the scores.
  const bool scores = rule.uses_attention_scores();
  Tensor probs, self_prob;
  if (scores) {
    probs = ops::scratch(Scratch::SlotProbs, slots.pos.shape(), DType::F32, kv_dev);
    self_prob = ops::scratch(Scratch::SelfProb, {b, heads}, DType::F32, kv_dev);
  }
  ops::attention_decode(q3, slots.k, slots.v, slots.pos, k3, v3, opt_attention_scale(cfg), out,
                        scores ? &probs : nullptr, scores ? &self_prob : nullptr);
  ChangedSlots changed = kv_decode_insert(rule, position, k3, v3, scores ? &probs : nullptr,
                                          scores ? &self_prob : nullptr, slots);
  if (delegated) ops::copy(out, a3);
  opt_layer_finish(cfg, w, ct, hidden, attn);
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
