#include "engine/kv_slots.h"

#include <algorithm>
#include <limits>

#include "runtime/ops/ops.h"
#include "runtime/ops/scratch.h"

namespace h2oflex {

namespace {

// Elements of a slot row: head_dim values, or the row's bytes when packed.
int64_t slot_row_elements(PackedFormat packed, int64_t head_dim) {
  return packed == PackedFormat::None
             ? head_dim
             : static_cast<int64_t>(packed_format_row(packed).row_bytes(head_dim));
}

}  // namespace

void check_kv_row_format(PackedFormat packed, int64_t head_dim) {
  if (packed == PackedFormat::None) return;
  const PackedFormatRow& row = packed_format_row(packed);
  H2OFLEX_INPUT_CHECK(row_fits(packed, head_dim), "policy.cache_format: ", row.name,
                      " stores KV rows as whole blocks of ", row.block_values,
                      " values; this model's head_dim is ", head_dim);
}

KvSlots KvSlots::allocate(int64_t batch, int64_t heads, int64_t capacity, int64_t head_dim,
                          DType dtype, Device device, PackedFormat packed) {
  KvSlots s;
  const Shape shape{batch, heads, capacity, slot_row_elements(packed, head_dim)};
  const DType stored = packed != PackedFormat::None ? DType::U8 : dtype;
  s.k = ops::empty(shape, stored, device).as_packed(packed);
  s.v = ops::empty(shape, stored, device).as_packed(packed);
  s.dim = head_dim;
  s.pos = ops::empty({batch, heads, capacity}, DType::I32, device);
  s.score = ops::empty({batch, heads, capacity}, DType::F32, device);
  s.clear();
  return s;
}

KvSlots KvSlots::wrap(char* base, uint64_t v_offset, int64_t batch, int64_t heads, int64_t capacity,
                      int64_t head_dim, DType dtype, PackedFormat packed, Device device) {
  KvSlots s;
  const Shape shape{batch, heads, capacity, slot_row_elements(packed, head_dim)};
  const DType stored = packed != PackedFormat::None ? DType::U8 : dtype;
  s.k = Tensor::wrap(base, shape, stored, device).as_packed(packed);
  s.v = Tensor::wrap(base + v_offset, shape, stored, device).as_packed(packed);
  s.dim = head_dim;
  return s;
}

void KvSlots::clear() {
  ops::fill(pos, -1.0f);
  ops::fill(score, 0.0f);
}

std::vector<std::vector<int32_t>> kept_positions(const Tensor& slot_pos) {
  const Tensor host = ops::on_device(slot_pos, Device::CPU);
  const int64_t rows = host.dim(0) * host.dim(1), cap = host.dim(2);
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cap; ++j) {
      const int32_t p = host.data<int32_t>()[r * cap + j];
      if (p >= 0) out[r].push_back(p);
    }
    std::sort(out[r].begin(), out[r].end());
  }
  return out;
}

namespace {

// The score each prompt token starts with, which also ranks it for prefill selection: +inf for
// the first `sinks` real tokens (picked, and never evicted), else the rule's prefill statistic
// (attention scores) or its fixed score (position, draw). [b, heads, s] f32 on `dev`.
Tensor initial_scores(const KvRule& rule, const Tensor* colsum, const std::vector<int32_t>& pad,
                      int64_t b, int64_t heads, int64_t s, Device dev) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const auto is_sink = [&](int64_t bh, int64_t j) {
    return j >= pad[bh / heads] && j - pad[bh / heads] < rule.sinks;
  };
  Tensor host;
  if (rule.score == SlotScore::Attention) {
    H2OFLEX_CHECK(rule.prefill != PrefillStat::None && colsum != nullptr,
                  "kv_prefill: ", rule.name(), " needs its prefill statistic");
    if (rule.scope == VictimScope::Layer) {
      H2OFLEX_CHECK(rule.sinks == 0, "kv_prefill: ", rule.name(), " shares scores over heads and ",
                    "cannot protect sinks");
      Tensor shared = ops::scratch(ops::Scratch::PrefillScore, colsum->shape(), DType::F32, dev);
      ops::copy(*colsum, shared);
      ops::average_over_heads(shared);
      return shared;
    }
    if (rule.sinks == 0) return *colsum;
    // Sinks under attention scores: marked on a host copy (no op writes +inf into a statistic).
    host = Tensor::empty({b, heads, s}, DType::F32);
    ops::copy(*colsum, host);
    for (int64_t bh = 0; bh < b * heads; ++bh) {
      for (int64_t j = 0; j < s; ++j) {
        if (is_sink(bh, j)) host.data<float>()[bh * s + j] = kInf;
      }
    }
  } else {
    H2OFLEX_CHECK(rule.evicts(), "kv_prefill: ", rule.name(), " has no slot score");
    host = Tensor::empty({b, heads, s}, DType::F32);
    for (int64_t bh = 0; bh < b * heads; ++bh) {
      for (int64_t j = 0; j < s; ++j) {
        host.data<float>()[bh * s + j] =
            is_sink(bh, j) ? kInf : rule.fixed_score(static_cast<int32_t>(j));
      }
    }
  }
  return ops::scratch_copy(ops::Scratch::PrefillScore, host, dev);
}

}  // namespace

void kv_prefill(const KvRule& rule, const Tensor& k, const Tensor& v, const Tensor* colsum,
                const std::vector<int32_t>& pad, KvSlots& slots) {
  const int64_t b = k.dim(0), s = k.dim(1), heads = k.dim(2), d = k.dim(3);
  const int64_t cap = slots.capacity();
  H2OFLEX_CHECK(slots.batch() == b && slots.heads() == heads && slots.head_dim() == d,
                "kv_prefill: slots shape");
  // Selection and the scatter into slot layout run where the prompt was computed; slots on
  // another device (a cache the host attends to) then receive only the kept slots.
  const Device dev = k.device();
  using ops::Scratch;
  // keep[b, heads, n_keep]: padded positions to store, ascending, -1 for unused; keep_score: the
  // score each kept token starts with. With position scores and no heavy count the picks are
  // exactly the sinks, the only tokens outside the recent window that rank +inf.
  Tensor keep, keep_score;
  if (rule.evicts()) {
    keep_score = initial_scores(rule, colsum, pad, b, heads, s, dev);
    const int picks = rule.sinks + rule.heavy;
    keep = ops::scratch(Scratch::PrefillKeep, {b, heads, picks + rule.recent}, DType::I32, dev);
    ops::select_heavy_recent(keep_score, pad, picks, rule.recent, keep);
  } else {
    H2OFLEX_CHECK(cap >= s, "kv_prefill: capacity ", cap, " < prompt ", s);
    Tensor host = Tensor::empty({b, heads, s}, DType::I32);
    for (int64_t bh = 0; bh < b * heads; ++bh) {
      for (int64_t j = 0; j < s; ++j) {
        host.data<int32_t>()[bh * s + j] = j < pad[bh / heads] ? -1 : static_cast<int32_t>(j);
      }
    }
    keep = ops::scratch_copy(Scratch::PrefillKeep, host, dev);
  }
  const bool staged = slots.k.device() != dev;
  KvSlots target = slots;
  if (staged) {
    target.k = ops::scratch(Scratch::StageK, slots.k.shape(), slots.k.dtype(), dev)
                   .as_packed(slots.k.packed());
    target.v = ops::scratch(Scratch::StageV, slots.v.shape(), slots.v.dtype(), dev)
                   .as_packed(slots.v.packed());
    target.pos = ops::scratch(Scratch::StagePos, slots.pos.shape(), DType::I32, dev);
    target.score = ops::scratch(Scratch::StageScore, slots.score.shape(), DType::F32, dev);
  }
  target.clear();
  // A full cache stores position p in slot p, so decode appends at slot = position.
  ops::kv_scatter_prefill(k, v, keep, keep_score.defined() ? &keep_score : nullptr,
                          /*compact=*/rule.evicts(), target.k, target.v, target.pos, target.score);
  if (staged) {
    ops::copy(target.k, slots.k);
    ops::copy(target.v, slots.v);
    ops::copy(target.pos, slots.pos);
    ops::copy(target.score, slots.score);
  }
}

ChangedSlots kv_decode_insert(const KvRule& rule, int32_t position, const Tensor& k_new,
                              const Tensor& v_new, const Tensor* slot_probs, const Tensor* new_prob,
                              KvSlots& slots) {
  const int64_t b = slots.batch(), heads = slots.heads();
  const Device dev = slots.k.device();
  if (rule.decode_scores()) {
    H2OFLEX_CHECK(slot_probs && new_prob, "kv_decode_insert: ", rule.name(),
                  " needs probabilities");
  }
  switch (rule.update) {
    case DecodeUpdate::None:
      break;
    case DecodeUpdate::Accumulate:
      ops::add_inplace(slots.score, *slot_probs);
      break;
    case DecodeUpdate::Replace:
      // Replacing would overwrite the sinks' +inf; no op restores it, so no such rule runs.
      H2OFLEX_CHECK(rule.sinks == 0, "kv_decode_insert: ", rule.name(),
                    " replaces scores and cannot protect sinks");
      ops::copy(*slot_probs, slots.score);
      break;
  }
  // Every head holds the same positions in the same slots, so averaging slot by slot is averaging
  // token by token, and every head then picks the same victim.
  if (rule.scope == VictimScope::Layer) ops::average_over_heads(slots.score);
  // A prefill_only rule always finds an empty slot (kv_insert takes that before the victim).
  Tensor victim;
  const bool evicts = rule.evicts();
  if (evicts) {
    victim = ops::scratch(ops::Scratch::Victims, {b, heads}, DType::I32, dev);
    // The R most recent real tokens, the new one included, are positions > position - R.
    std::vector<int32_t> protect(static_cast<size_t>(b), position - rule.recent + 1);
    ops::evict_lowest_score(slots.score, slots.pos, protect, victim);
  }
  // Without attention scores the new token's score is fixed: its position, its draw, or 0.
  const float fixed_score = rule.fixed_score(position);
  Tensor changed_dev = ops::scratch(ops::Scratch::Changed, {b, heads}, DType::I32, dev);
  ops::kv_insert(k_new, v_new, evicts ? &victim : nullptr, position,
                 rule.decode_scores() ? new_prob : nullptr, fixed_score, slots.k, slots.v,
                 slots.pos, slots.score, changed_dev);
  ChangedSlots changed(static_cast<size_t>(b * heads));
  Tensor host = Tensor::wrap(changed.data(), {b, heads}, DType::I32);
  ops::copy(changed_dev, host);
  for (int32_t slot : changed) {
    H2OFLEX_CHECK(slot >= 0, "kv_decode_insert: no slot to store the token at position ", position);
  }
  return changed;
}

}  // namespace h2oflex
