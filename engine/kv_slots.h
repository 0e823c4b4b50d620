// KV slots of one (layer, batch of sequences) on the compute side, and the two moments that
// decide what they hold: prefill (which prompt tokens to keep) and each decode step (where the new
// token goes, and what it evicts). Storage is laid out per (sequence, head) contiguously —
// [b, heads, capacity, head_dim] — so a changed slot is one contiguous head_dim-long record.
#pragma once

#include <vector>

#include "policy/kv_policy.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

// InputError naming policy.cache_format when KV rows of head_dim values cannot be stored in
// `packed` (a GGUF block format holds whole blocks of 32).
void check_kv_row_format(PackedFormat packed, int64_t head_dim);

struct KvSlots {
  // [b, heads, cap, d] in the KV storage dtype, or compressed: u8 [b, heads, cap,
  // row bytes of d values] packed in a KV format (cache_format, Tensor::packed()).
  Tensor k, v;
  Tensor pos;    // [b, heads, cap] i32: padded position of the token in the slot, -1 if empty
  Tensor score;  // [b, heads, cap] f32: eviction score (h2o: accumulated attention)

  // Empty slots (positions -1, scores 0) on `device`.
  static KvSlots allocate(int64_t batch, int64_t heads, int64_t capacity, int64_t head_dim,
                          DType dtype, Device device = Device::CPU,
                          PackedFormat packed = PackedFormat::None);
  // K and V of slots laid over memory at `base` (V after `v_offset` bytes).
  static KvSlots wrap(char* base, uint64_t v_offset, int64_t batch, int64_t heads, int64_t capacity,
                      int64_t head_dim, DType dtype, PackedFormat packed, Device device);
  int64_t batch() const { return k.dim(0); }
  int64_t heads() const { return k.dim(1); }
  int64_t capacity() const { return k.dim(2); }
  int64_t head_dim() const { return dim; }
  int64_t dim = 0;  // values per K or V row
  void clear();
};

// Where each (sequence, head) wrote this step: slot index, or -1 if nothing changed.
using ChangedSlots = std::vector<int32_t>;  // [b * heads]

// Fills `slots` from a prompt: k, v [b, s, heads, d] f32, colsum [b, heads, s] (rules with
// attention scores only; may be null otherwise), pad per sequence. Padding is never stored. The
// slots may be on another device than the inputs (a cache the host attends to): selection and the
// scatter into slot layout then run on the inputs' device and only the kept slots are copied over.
void kv_prefill(const KvRule& rule, const Tensor& k, const Tensor& v, const Tensor* colsum,
                const std::vector<int32_t>& pad, KvSlots& slots);

// After attention of the token at padded position `position`: updates the scores with the slot
// probabilities as the rule says (added for h2o, replacing them for tova), picks each (sequence,
// head)'s slot for the new token — the next free slot, or the victim of the rule — and writes
// k_new, v_new [b, heads, d] f32 there. Returns the changed slots.
ChangedSlots kv_decode_insert(const KvRule& rule, int32_t position, const Tensor& k_new,
                              const Tensor& v_new, const Tensor* slot_probs, const Tensor* new_prob,
                              KvSlots& slots);

// The positions each (sequence, head) holds, sorted: [b * heads][...]. For tests and reports.
std::vector<std::vector<int32_t>> kept_positions(const Tensor& slot_pos);

}  // namespace h2oflex
