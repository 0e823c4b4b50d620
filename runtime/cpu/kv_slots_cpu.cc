// KV slot stores (prefill scatter, decode insert) and the plain memory ops on the host.
#include <algorithm>
#include <cstring>

#include "runtime/core/half.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/packed_rows.h"

namespace h2oflex::cpu {

namespace {

// Stores the n f32 values of one KV row into slot row `row` of storage of any float dtype, or
// packed in the slots' KV format (cache_format).
void store_row(const float* src, Tensor& dst, int64_t row, int64_t n) {
  const size_t count = static_cast<size_t>(n);
  const int64_t offset = row * n;
  switch (dst.dtype()) {
    case DType::F32:
      std::memcpy(dst.data<float>() + offset, src, count * 4);
      return;
    case DType::BF16:
      convert_f32_to_bf16(src, dst.data<uint16_t>() + offset, count);
      return;
    case DType::F16:
      convert_f32_to_f16(src, dst.data<uint16_t>() + offset, count);
      return;
    case DType::U8: {  // packed (cache_format)
      const auto rb = static_cast<int64_t>(packed_format_row(dst.packed()).row_bytes(n));
      pack_rows(dst.packed(), src, 1, n, dst.data<uint8_t>() + row * rb);
      return;
    }
    case DType::I32:
      break;
  }
  throw InternalError("KV storage must be f32, f16, bf16 or compressed");
}

}  // namespace

void copy(const Tensor& src, Tensor& dst) {
  if (src.nbytes() > 0 && src.raw() != dst.raw()) std::memcpy(dst.raw(), src.raw(), src.nbytes());
}

void gather_ranges(const void* src, const ByteRanges& ranges, void* dst) {
  char* out = static_cast<char*>(dst);
  for (const auto& [off, len] : ranges) {
    std::memcpy(out, static_cast<const char*>(src) + off, len);
    out += len;
  }
}

void fill(Tensor& t, float value) {
  if (t.dtype() == DType::I32) {
    std::fill_n(t.data<int32_t>(), t.numel(), static_cast<int32_t>(value));
  } else {
    std::fill_n(t.data<float>(), t.numel(), value);
  }
}

void kv_scatter_prefill(const Tensor& k, const Tensor& v, const Tensor& keep,
                        const Tensor* keep_score, bool compact, Tensor& k_slots, Tensor& v_slots,
                        Tensor& slot_pos, Tensor& slot_score) {
  const int64_t s = k.dim(1), heads = k.dim(2), d = k.dim(3);
  const int64_t bh_count = keep.dim(0) * keep.dim(1), n_keep = keep.dim(2);
  const int64_t cap = k_slots.dim(2);
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < bh_count; ++bh) {
    const int64_t bi = bh / heads, hi = bh % heads;
    int64_t next = 0;
    for (int64_t i = 0; i < n_keep; ++i) {
      const int32_t p = keep.data<int32_t>()[bh * n_keep + i];
      if (p < 0) continue;
      const int64_t slot = compact ? next++ : p;
      const int64_t src = ((bi * s + p) * heads + hi) * d;
      const int64_t row = bh * cap + slot;
      store_row(k.data<float>() + src, k_slots, row, d);
      store_row(v.data<float>() + src, v_slots, row, d);
      slot_pos.data<int32_t>()[bh * cap + slot] = p;
      slot_score.data<float>()[bh * cap + slot] =
          keep_score ? keep_score->data<float>()[bh * s + p] : 0.0f;
    }
  }
}

void kv_insert(const Tensor& k_new, const Tensor& v_new, const Tensor* victim, int32_t position,
               const Tensor* new_score, float fixed_score, Tensor& k_slots, Tensor& v_slots,
               Tensor& slot_pos, Tensor& slot_score, Tensor& changed) {
  const int64_t bh_count = k_slots.dim(0) * k_slots.dim(1), cap = k_slots.dim(2);
  const int64_t d = k_new.dim(2);
  int32_t* pos = slot_pos.data<int32_t>();
  for (int64_t bh = 0; bh < bh_count; ++bh) {
    int64_t slot = -1;
    if (victim == nullptr) {
      slot = position;
    } else {
      for (int64_t j = 0; j < cap && slot < 0; ++j) {
        if (pos[bh * cap + j] < 0) slot = j;
      }
      if (slot < 0) slot = victim->data<int32_t>()[bh];
    }
    if (slot < 0 || slot >= cap) {
      changed.data<int32_t>()[bh] = -1;
      continue;
    }
    const int64_t row = bh * cap + slot;
    store_row(k_new.data<float>() + bh * d, k_slots, row, d);
    store_row(v_new.data<float>() + bh * d, v_slots, row, d);
    pos[bh * cap + slot] = position;
    slot_score.data<float>()[bh * cap + slot] =
        new_score ? new_score->data<float>()[bh] : fixed_score;
    changed.data<int32_t>()[bh] = static_cast<int32_t>(slot);
  }
}

}  // namespace h2oflex::cpu
