#include "runtime/engine/kv_slots.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/core/half.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

KvSlots KvSlots::allocate(int64_t batch, int64_t heads, int64_t capacity, int64_t head_dim,
                          DType dtype) {
  KvSlots s;
  s.k = Tensor::zeros({batch, heads, capacity, head_dim}, dtype);
  s.v = Tensor::zeros({batch, heads, capacity, head_dim}, dtype);
  s.pos = Tensor::empty({batch, heads, capacity}, DType::I32);
  s.score = Tensor::zeros({batch, heads, capacity}, DType::F32);
  s.clear();
  return s;
}

void KvSlots::clear() {
  std::fill_n(pos.data<int32_t>(), pos.numel(), -1);
  std::fill_n(score.data<float>(), score.numel(), 0.0f);
}

std::vector<std::vector<int32_t>> kept_positions(const Tensor& slot_pos) {
  const int64_t rows = slot_pos.dim(0) * slot_pos.dim(1), cap = slot_pos.dim(2);
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cap; ++j) {
      const int32_t p = slot_pos.data<int32_t>()[r * cap + j];
      if (p >= 0) out[r].push_back(p);
    }
    std::sort(out[r].begin(), out[r].end());
  }
  return out;
}

void store_vector(const float* src, Tensor& dst, size_t element_offset, int64_t n) {
  switch (dst.dtype()) {
    case DType::F32:
      std::memcpy(dst.data<float>() + element_offset, src, static_cast<size_t>(n) * 4);
      break;
    case DType::BF16:
      convert_f32_to_bf16(src, dst.data<uint16_t>() + element_offset, static_cast<size_t>(n));
      break;
    case DType::F16:
      convert_f32_to_f16(src, dst.data<uint16_t>() + element_offset, static_cast<size_t>(n));
      break;
    default:
      throw InternalError("KV storage must be f32, f16 or bf16");
  }
}

namespace {

// Scores of a prompt token for selection and for later eviction, per rule.
float streaming_score(int32_t position, int32_t first_real, int sinks) {
  return position - first_real < sinks ? std::numeric_limits<float>::infinity()
                                       : static_cast<float>(position);
}

}  // namespace

void kv_prefill(const EvictionRule& rule, const Tensor& k, const Tensor& v, const Tensor* colsum,
                const std::vector<int32_t>& pad, KvSlots& slots) {
  const int64_t b = k.dim(0), s = k.dim(1), heads = k.dim(2), d = k.dim(3);
  const int64_t cap = slots.capacity();
  H2OFLEX_CHECK(slots.batch() == b && slots.heads() == heads && slots.head_dim() == d,
                "kv_prefill: slots shape");
  slots.clear();
  // keep[b, heads, n_keep]: padded positions to store, ascending, -1 for unused.
  Tensor keep;
  if (rule.evicts()) {
    Tensor scores = Tensor::empty({b, heads, s}, DType::F32);
    if (rule.uses_attention_scores()) {
      H2OFLEX_CHECK(colsum != nullptr, "kv_prefill: h2o needs column sums");
      std::memcpy(scores.raw(), colsum->raw(), scores.nbytes());
    } else {  // streaming: earlier tokens rank higher, so the "heavy" picks are the sinks
      for (int64_t bh = 0; bh < b * heads; ++bh) {
        for (int64_t j = 0; j < s; ++j) scores.data<float>()[bh * s + j] = -static_cast<float>(j);
      }
    }
    keep = Tensor::empty({b, heads, rule.heavy + rule.recent}, DType::I32);
    ops::select_heavy_recent(scores, pad, rule.heavy, rule.recent, keep);
  } else {
    H2OFLEX_CHECK(cap >= s, "kv_prefill: capacity ", cap, " < prompt ", s);
    keep = Tensor::empty({b, heads, s}, DType::I32);
    for (int64_t bh = 0; bh < b * heads; ++bh) {
      for (int64_t j = 0; j < s; ++j) {
        keep.data<int32_t>()[bh * s + j] = j < pad[bh / heads] ? -1 : static_cast<int32_t>(j);
      }
    }
  }
  const int64_t n_keep = keep.dim(2);
  H2OFLEX_CHECK(n_keep <= cap, "kv_prefill: keeping ", n_keep, " in ", cap, " slots");
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < b * heads; ++bh) {
    const int64_t bi = bh / heads, hi = bh % heads;
    int64_t slot = 0;
    for (int64_t i = 0; i < n_keep; ++i) {
      const int32_t p = keep.data<int32_t>()[bh * n_keep + i];
      if (p < 0) continue;
      // Full cache: slot index = position, so decode appends at slot = position.
      const int64_t dst = rule.evicts() ? slot++ : p;
      const size_t src_off = static_cast<size_t>(((bi * s + p) * heads + hi) * d);
      const size_t dst_off = static_cast<size_t>((bh * cap + dst) * d);
      store_vector(k.data<float>() + src_off, slots.k, dst_off, d);
      store_vector(v.data<float>() + src_off, slots.v, dst_off, d);
      slots.pos.data<int32_t>()[bh * cap + dst] = p;
      float sc = 0.0f;
      if (rule.kind == EvictionRule::Kind::H2O) sc = colsum->data<float>()[bh * s + p];
      if (rule.kind == EvictionRule::Kind::Streaming) sc = streaming_score(p, pad[bi], rule.heavy);
      slots.score.data<float>()[bh * cap + dst] = sc;
    }
  }
}

ChangedSlots kv_decode_insert(const EvictionRule& rule, int32_t position, const Tensor& k_new,
                              const Tensor& v_new, const Tensor* slot_probs, const Tensor* new_prob,
                              KvSlots& slots) {
  const int64_t b = slots.batch(), heads = slots.heads(), cap = slots.capacity();
  const int64_t d = slots.head_dim();
  ChangedSlots changed(static_cast<size_t>(b * heads), -1);
  float* score = slots.score.data<float>();
  int32_t* pos = slots.pos.data<int32_t>();
  if (rule.uses_attention_scores()) {
    H2OFLEX_CHECK(slot_probs && new_prob, "kv_decode_insert: h2o needs probabilities");
    const float* p = slot_probs->data<float>();
    for (int64_t i = 0; i < b * heads * cap; ++i) score[i] += p[i];
  }
  Tensor victim;
  if (rule.evicts()) {
    victim = Tensor::empty({b, heads}, DType::I32);
    // The R most recent real tokens, the new one included, are positions > position - R.
    std::vector<int32_t> protect(static_cast<size_t>(b), position - rule.recent + 1);
    ops::evict_lowest_score(slots.score, slots.pos, protect, victim);
  }
  for (int64_t bh = 0; bh < b * heads; ++bh) {
    int64_t slot = -1;
    if (!rule.evicts()) {
      slot = position;
      H2OFLEX_CHECK(slot < cap, "kv_decode_insert: full cache capacity ", cap, " exhausted");
    } else {
      for (int64_t j = 0; j < cap && slot < 0; ++j) {
        if (pos[bh * cap + j] < 0) slot = j;
      }
      if (slot < 0) slot = victim.data<int32_t>()[bh];
      H2OFLEX_CHECK(slot >= 0, "kv_decode_insert: no slot to evict");
    }
    const size_t off = static_cast<size_t>((bh * cap + slot) * d);
    store_vector(k_new.data<float>() + bh * d, slots.k, off, d);
    store_vector(v_new.data<float>() + bh * d, slots.v, off, d);
    pos[bh * cap + slot] = position;
    float sc = 0.0f;
    if (rule.kind == EvictionRule::Kind::H2O) sc = new_prob->data<float>()[bh];
    if (rule.kind == EvictionRule::Kind::Streaming) sc = static_cast<float>(position);
    score[bh * cap + slot] = sc;
    changed[static_cast<size_t>(bh)] = static_cast<int32_t>(slot);
  }
  return changed;
}

}  // namespace h2oflex
