#include "runtime/engine/layer_step.h"

#include <cstring>

namespace h2oflex {

ChangedSlots decode_layer(const OptConfig& cfg, const OptLayerWeights& w, ops::ComputeType ct,
                          const EvictionRule& rule, int32_t position, Tensor& hidden,
                          KvSlots& slots) {
  const int64_t b = hidden.dim(0), heads = cfg.heads, d = cfg.head_dim();
  Tensor q = Tensor::empty({b, cfg.hidden}, DType::F32);
  Tensor k = Tensor::empty({b, cfg.hidden}, DType::F32);
  Tensor v = Tensor::empty({b, cfg.hidden}, DType::F32);
  Tensor attn = Tensor::empty({b, cfg.hidden}, DType::F32);
  opt_attention_input(cfg, w, ct, hidden, q, k, v);
  const Shape per_head{b, heads, d};
  Tensor q3 = q.reshape(per_head), k3 = k.reshape(per_head), v3 = v.reshape(per_head);
  Tensor a3 = attn.reshape(per_head);
  // Slot probabilities are only needed where they feed the scores.
  const bool scores = rule.uses_attention_scores();
  Tensor probs, self_prob;
  if (scores) {
    probs = Tensor::empty(slots.pos.shape(), DType::F32);
    self_prob = Tensor::empty({b, heads}, DType::F32);
  }
  ops::attention_decode(q3, slots.k, slots.v, slots.pos, k3, v3, opt_attention_scale(cfg), a3,
                        scores ? &probs : nullptr, scores ? &self_prob : nullptr);
  ChangedSlots changed = kv_decode_insert(rule, position, k3, v3, scores ? &probs : nullptr,
                                          scores ? &self_prob : nullptr, slots);
  opt_layer_finish(cfg, w, ct, hidden, attn);
  return changed;
}

Tensor last_positions(const Tensor& hidden, int64_t batch, int64_t seq) {
  const int64_t h = hidden.dim(1);
  Tensor last = Tensor::empty({batch, h}, DType::F32);
  for (int64_t i = 0; i < batch; ++i) {
    std::memcpy(last.data<float>() + i * h, hidden.data<float>() + ((i + 1) * seq - 1) * h,
                static_cast<size_t>(h) * 4);
  }
  return last;
}

}  // namespace h2oflex
