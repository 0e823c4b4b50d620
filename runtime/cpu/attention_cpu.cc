// Attention kernels: causal prefill over a left-padded prompt (with H2O column sums) as blocked
// GEMMs (per head and block of queries: scores = Q K^T, causal softmax, out = P V) and
// single-token decode over KV slots, both grouped-query when several query heads share a KV head.
// Scores and softmax are fp32; probabilities are full softmax values (the exponential within 2 ulp,
// softmax_rows.h, as CUDA's expf is), so H2O accumulates the same numbers to rounding whichever
// backend runs. With bf16 compute the prefill's two products take bf16 inputs (q, k, v and the
// probabilities rounded, sums in f32), as torch's bf16 attention does: on a CPU with a bf16 matmul
// they ran at 2x the f32 GEMMs' rate.
#include <dnnl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/core/vector_clones.h"
#include "runtime/cpu/attend_slots_avx512.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/gemm_bf16.h"
#include "runtime/cpu/packed_rows.h"
#include "runtime/cpu/prefill_head_avx512_bf16.h"
#include "runtime/cpu/softmax_rows.h"

namespace h2oflex::cpu {

namespace {

inline float dot(const float* a, const float* b, int64_t d) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < d; ++i) s += a[i] * b[i];
  return s;
}

inline void axpy(float alpha, const float* x, float* y, int64_t d) {
#pragma omp simd
  for (int64_t i = 0; i < d; ++i) y[i] += alpha * x[i];
}

// Cached row `row` (of d values) as f32: in place for an f32 cache, else converted or
// unpacked (a packed cache, cache_format) into `scratch`.
inline const float* load_row(const Tensor& t, int64_t row, int64_t d, float* scratch) {
  const size_t offset = static_cast<size_t>(row * d);
  switch (t.dtype()) {
    case DType::F32:
      return t.data<float>() + offset;
    case DType::U8: {  // packed (cache_format)
      const auto rb = static_cast<int64_t>(packed_format_row(t.packed()).row_bytes(d));
      unpack_rows_f32(t.packed(), t.data<uint8_t>() + row * rb, 1, d, scratch);
      break;
    }
    case DType::BF16: {
      // Widened here, not by a call: inlined into the decode head's clones it vectorises.
      const uint16_t* src = t.data<uint16_t>() + offset;
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) scratch[i] = bf16_to_f32(src[i]);
      break;
    }
    case DType::F16:
      convert_f16_to_f32(t.data<uint16_t>() + offset, scratch, static_cast<size_t>(d));
      break;
    default:
      throw InternalError("KV cache must be f32, f16 or bf16");
  }
  return scratch;
}

// Queries per block of the prefill: the block's scores (kQueryBlock x keys floats) stay in cache
// between the two GEMMs that produce and consume them.
constexpr int64_t kQueryBlock = 64;

// C = alpha * op(A) * op(B), row-major, on the calling thread (inside a parallel region the
// library does not start threads of its own).
void gemm_row_major(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                    int64_t ldc) {
  const dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a,
                                      lda, b, ldb, 0.0f, c, ldc);
  if (st != dnnl_success) throw InternalError("attention: dnnl_sgemm failed");
}

// One (sequence, head) of the prefill in f32: qb, kb, vb, ob point at its first real position
// (rows of stride q_stride / kv_stride); col (len values) gains the column sums.
void prefill_head_f32(const float* qb, const float* kb, const float* vb, float* ob, int64_t len,
                      int64_t d, int64_t q_stride, int64_t kv_stride, float scale, float* scores,
                      double* col) {
  // Causal blocks of queries: rows [i0, i1) see keys [0, i1), so no block computes scores above
  // the diagonal of another.
  for (int64_t i0 = 0; i0 < len; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, len - i0), keys = i0 + rows;
    gemm_row_major(false, true, rows, keys, d, scale, qb + i0 * q_stride, q_stride, kb, kv_stride,
                   scores, keys);
    for (int64_t r = 0; r < rows; ++r) softmax_causal_row(scores + r * keys, i0 + r + 1, keys, col);
    gemm_row_major(false, false, rows, d, keys, 1.0f, scores, keys, vb, kv_stride,
                   ob + i0 * q_stride, q_stride);
  }
}

// The bf16 products pad a head's rows to a multiple of this with zeros, so that the blocks'
// GEMM shapes repeat across prompt lengths (one library kernel per shape).
constexpr int64_t kBf16RowPad = 16;

int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// One thread's buffers for the bf16 products of a head of up to `s` positions.
struct Bf16Head {
  std::vector<uint16_t> q, k, v, p;  // the head's rows, the block's probabilities
  std::vector<float> out;            // the block's weighted sums
  Bf16Head(int64_t s, int64_t d)
      : q(static_cast<size_t>(round_up(s, kBf16RowPad) * d)),
        k(q.size()),
        v(q.size()),
        p(static_cast<size_t>(kQueryBlock * round_up(s, kBf16RowPad))),
        out(static_cast<size_t>(kQueryBlock * d)) {}
};

// The same with bf16 products through the library's matmul (where prefill_head_avx512_bf16 does
// not run).
void prefill_head_bf16(const float* qb, const float* kb, const float* vb, float* ob, int64_t len,
                       int64_t d, int64_t q_stride, int64_t kv_stride, float scale, float* scores,
                       double* col, Bf16Head& t) {
  const int64_t padded = round_up(len, kBf16RowPad);
  convert_rows_f32_to_bf16(qb, q_stride, len, padded, d, t.q.data());
  convert_rows_f32_to_bf16(kb, kv_stride, len, padded, d, t.k.data());
  convert_rows_f32_to_bf16(vb, kv_stride, len, padded, d, t.v.data());
  for (int64_t i0 = 0; i0 < len; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, len - i0);
    const int64_t padded_rows = round_up(rows, kBf16RowPad), keys = i0 + padded_rows;
    // scores = Q_block · Kᵀ: key j's value t sits at k[j * d + t].
    gemm_bf16_f32(padded_rows, keys, d, t.q.data() + i0 * d, d, t.k.data(), 1, d, scores, keys);
    // The causal softmax of the block's real rows (query r sees keys [0, i0 + r]) in f32, its
    // column sums for H2O, then the probabilities rounded for the weighted sum.
    for (int64_t r = 0; r < rows; ++r) {
      float* row = scores + r * keys;
      for (int64_t j = 0; j <= i0 + r; ++j) row[j] *= scale;
      softmax_causal_row(row, i0 + r + 1, keys, col);
      convert_f32_to_bf16(row, t.p.data() + r * keys, static_cast<size_t>(keys));
    }
    std::fill(t.p.data() + rows * keys, t.p.data() + padded_rows * keys, uint16_t{0});
    gemm_bf16_f32(padded_rows, d, keys, t.p.data(), keys, t.v.data(), d, 1, t.out.data(), d);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(t.out.data() + r * d, d, ob + (i0 + r) * q_stride);
    }
  }
}

// How the decode loops read a KV head's cached rows. A plain f32 or bf16 cache is read in place
// (bf16 widened inside the dot product and the weighted sum rather than into a scratch row), with
// each row's lines touched kPrefetchRows rows ahead: a head's rows are one sequential stream, and
// with the hardware prefetcher alone decode attention read its cache more slowly than the weight
// GEMMs read theirs. A compressed or f16 cache is converted row by row (load_row).
constexpr int64_t kPrefetchRows = 16;

inline float widen_value(float v) {
  return v;
}
inline float widen_value(uint16_t v) {
  return bf16_to_f32(v);
}

template <typename T>
struct PlainRows {
  const T* base;  // the KV head's first row
  int64_t d;
  void prefetch(int64_t j) const {
    const char* ahead = reinterpret_cast<const char*>(base + (j + kPrefetchRows) * d);
    for (size_t off = 0; off < static_cast<size_t>(d) * sizeof(T); off += 64) {
      __builtin_prefetch(ahead + off);
    }
  }
  float dot(const float* q, int64_t j) const {
    const T* r = base + j * d;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < d; ++i) s += q[i] * widen_value(r[i]);
    return s;
  }
  void axpy(float alpha, int64_t j, float* acc) const {
    const T* r = base + j * d;
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) acc[i] += alpha * widen_value(r[i]);
  }
};

struct ConvertedRows {
  const Tensor& t;
  int64_t base, d;  // the KV head's first row, values per row
  float* scratch;
  void prefetch(int64_t) const {}
  float dot(const float* q, int64_t j) const {
    return cpu::dot(q, load_row(t, base + j, d, scratch), d);
  }
  void axpy(float alpha, int64_t j, float* acc) const {
    cpu::axpy(alpha, load_row(t, base + j, d, scratch), acc, d);
  }
};

// One query row against its KV head: softmax over the retained slots and the new token (score
// `self`), then acc = the probability-weighted sum of the V rows and v_new. p receives the
// slots' probabilities (0 for empty slots); returns the new token's. Inlined into each of
// decode_head's clones, so the row readers get its vector width.
template <typename Rows>
inline __attribute__((always_inline)) float attend_slots(const float* qi, const Rows& k,
                                                         const Rows& v, const int32_t* pos,
                                                         float self, float scale,
                                                         const float* v_new, int64_t cap, int64_t d,
                                                         float* p, float* acc) {
  float mx = self;
  for (int64_t j = 0; j < cap; ++j) {
    k.prefetch(j);
    if (pos[j] < 0) {
      p[j] = -std::numeric_limits<float>::infinity();  // its exponential is 0
      continue;
    }
    p[j] = k.dot(qi, j) * scale;
    mx = std::max(mx, p[j]);
  }
  self = exp_approx(self - mx);
  const float inv = 1.0f / (self + exp_shifted_sum(p, cap, mx));
  std::fill_n(acc, d, 0.0f);
  for (int64_t j = 0; j < cap; ++j) {
    v.prefetch(j);
    if (pos[j] < 0) {
      p[j] = 0.0f;
      continue;
    }
    p[j] *= inv;
    v.axpy(p[j], j, acc);
  }
  self *= inv;
  axpy(self, v_new, acc, d);
  return self;
}

// One query head's decode attention over its KV head's slots. Compiled for the widest vectors
// the CPU has: the dot products, the weighted sums and the widening of a 16-bit cache are most
// of a decode step's time outside the GEMMs (at the baseline's SSE2 a decode step of OPT-1.3B
// spent a quarter of its time here).
H2OFLEX_VECTOR_CLONES void decode_head(const Tensor& q, const Tensor& k_cache,
                                       const Tensor& v_cache, const Tensor& slot_pos,
                                       const Tensor& k_new, const Tensor& v_new, float scale,
                                       int64_t bh, int64_t h, int64_t kvh, int64_t group,
                                       int64_t cap, int64_t d, float* p, float* vec, float* acc,
                                       Tensor& out, float* probs_out, float* self_out) {
  const int64_t bkv = bh / h * kvh + bh % h / group;  // the KV head this query head reads
  const float* qi = q.data<float>() + bh * d;
  const int32_t* pos = slot_pos.data<int32_t>() + bkv * cap;
  const int64_t base = bkv * cap;  // the KV head's first cached row
  const float* vn = v_new.data<float>() + bkv * d;
  float self = dot(qi, k_new.data<float>() + bkv * d, d) * scale;
  const DType kind = k_cache.dtype() == v_cache.dtype() ? k_cache.dtype() : DType::U8;
  if ((kind == DType::F32 || kind == DType::BF16) && attend_slots_avx512_takes(d)) {
    const size_t row_bytes = static_cast<size_t>(d) * dtype_size(kind);
    self = attend_slots_avx512(qi, static_cast<const char*>(k_cache.raw()) + base * row_bytes,
                               static_cast<const char*>(v_cache.raw()) + base * row_bytes,
                               kind == DType::BF16, pos, self, scale, vn, cap, d, p, acc);
  } else if (kind == DType::F32) {
    const PlainRows<float> k{k_cache.data<float>() + base * d, d};
    const PlainRows<float> v{v_cache.data<float>() + base * d, d};
    self = attend_slots(qi, k, v, pos, self, scale, vn, cap, d, p, acc);
  } else if (kind == DType::BF16) {
    const PlainRows<uint16_t> k{k_cache.data<uint16_t>() + base * d, d};
    const PlainRows<uint16_t> v{v_cache.data<uint16_t>() + base * d, d};
    self = attend_slots(qi, k, v, pos, self, scale, vn, cap, d, p, acc);
  } else {
    const ConvertedRows k{k_cache, base, d, vec}, v{v_cache, base, d, vec};
    self = attend_slots(qi, k, v, pos, self, scale, vn, cap, d, p, acc);
  }
  std::copy_n(acc, d, out.data<float>() + bh * d);
  if (probs_out != nullptr) std::copy_n(p, cap, probs_out + bh * cap);
  if (self_out != nullptr) self_out[bh] = self;
}

}  // namespace

void attention_prefill(const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::vector<int32_t>& pad, float scale, Tensor& out, Tensor* colsum,
                       ComputeType ct) {
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3);
  // Where the products run: bf16 on the AVX512-BF16 kernel, else through the library's bf16
  // matmul, else (or for f32 and f16 compute) f32.
  const bool bf16 = ct == ComputeType::BF16;
  const bool bf16_avx512 = bf16 && prefill_head_avx512_bf16_takes(d);
  const bool bf16_library = bf16 && !bf16_avx512 && gemm_has_kernel(ct);
  const int64_t kvh = k.dim(2), group = h / kvh;
  const int64_t q_stride = h * d;     // between consecutive positions of one query head
  const int64_t kv_stride = kvh * d;  // and of one KV head
  // With shared KV heads, each query head's column sums are kept apart and added afterwards in
  // head order, so the result does not depend on how threads share out the heads.
  std::vector<double> head_cols;
  if (colsum != nullptr && group > 1) head_cols.resize(static_cast<size_t>(b * h * s));
#pragma omp parallel
  {
    std::vector<float> scores(static_cast<size_t>(kQueryBlock * round_up(s, kBf16RowPad)));
    // 16 more than the positions: the AVX512-BF16 kernel's softmax adds its rows' padding (zeros)
    // up to a multiple of 16 (softmax_scaled_row_bf16).
    std::vector<double> col(static_cast<size_t>(s + 16));
    std::optional<Bf16Head> bf16_head;
    if (bf16_library) bf16_head.emplace(s, d);
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < b * h; ++bh) {
      const int64_t bi = bh / h, hi = bh % h, gi = hi / group;
      const int64_t p0 = pad[bi], len = s - p0;  // the real positions
      const float* qb = q.data<float>() + (bi * s + p0) * q_stride + hi * d;
      const float* kb = k.data<float>() + (bi * s + p0) * kv_stride + gi * d;
      const float* vb = v.data<float>() + (bi * s + p0) * kv_stride + gi * d;
      float* ob = out.data<float>() + bi * s * q_stride + hi * d;
      for (int64_t i = 0; i < p0; ++i) std::fill_n(ob + i * q_stride, d, 0.0f);
      ob += p0 * q_stride;
      std::fill(col.begin(), col.end(), 0.0);
      if (bf16_avx512) {
        prefill_head_avx512_bf16(qb, kb, vb, ob, len, d, q_stride, kv_stride, scale,
                                 col.data() + p0);
      } else if (bf16_library) {
        prefill_head_bf16(qb, kb, vb, ob, len, d, q_stride, kv_stride, scale, scores.data(),
                          col.data() + p0, *bf16_head);
      } else {
        prefill_head_f32(qb, kb, vb, ob, len, d, q_stride, kv_stride, scale, scores.data(),
                         col.data() + p0);
      }
      if (colsum == nullptr) continue;
      if (group == 1) {
        float* cs = colsum->data<float>() + bh * s;
        for (int64_t j = 0; j < s; ++j) cs[j] = static_cast<float>(col[j]);
      } else {
        std::copy_n(col.begin(), s, head_cols.begin() + bh * s);
      }
    }
  }
  if (colsum != nullptr && group > 1) {
    for (int64_t bg = 0; bg < b * kvh; ++bg) {
      const int64_t first_head = bg * group;  // (bi * kvh + gi) * group == bi * h + gi * group
      float* cs = colsum->data<float>() + bg * s;
      for (int64_t j = 0; j < s; ++j) {
        double total = 0;
        for (int64_t m = 0; m < group; ++m) total += head_cols[(first_head + m) * s + j];
        cs[j] = static_cast<float>(total);
      }
    }
  }
}

void attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& slot_pos, const Tensor& k_new, const Tensor& v_new, float scale,
                      Tensor& out, Tensor* slot_probs, Tensor* new_prob) {
  const int64_t b = q.dim(0), h = q.dim(1), d = q.dim(2), cap = k_cache.dim(2);
  const int64_t kvh = k_cache.dim(1), group = h / kvh;
  // With shared KV heads the probabilities are kept per query head and summed afterwards in head
  // order (deterministic); with one query head per KV head they go straight to the outputs.
  const bool grouped = group > 1;
  std::vector<float> head_probs, head_self;
  if (grouped && slot_probs != nullptr) head_probs.resize(static_cast<size_t>(b * h * cap));
  if (grouped && new_prob != nullptr) head_self.resize(static_cast<size_t>(b * h));
  float* probs_out = slot_probs == nullptr ? nullptr
                     : grouped             ? head_probs.data()
                                           : slot_probs->data<float>();
  float* self_out = new_prob == nullptr ? nullptr
                    : grouped           ? head_self.data()
                                        : new_prob->data<float>();
#pragma omp parallel
  {
    std::vector<float> p(static_cast<size_t>(cap)), vec(static_cast<size_t>(d)),
        acc(static_cast<size_t>(d));
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < b * h; ++bh) {
      decode_head(q, k_cache, v_cache, slot_pos, k_new, v_new, scale, bh, h, kvh, group, cap, d,
                  p.data(), vec.data(), acc.data(), out, probs_out, self_out);
    }
  }
  if (!grouped) return;
  for (int64_t bg = 0; bg < b * kvh; ++bg) {
    const int64_t first_head = bg * group;
    if (slot_probs != nullptr) {
      float* dst = slot_probs->data<float>() + bg * cap;
      for (int64_t j = 0; j < cap; ++j) {
        float total = 0.0f;
        for (int64_t m = 0; m < group; ++m) total += head_probs[(first_head + m) * cap + j];
        dst[j] = total;
      }
    }
    if (new_prob != nullptr) {
      float total = 0.0f;
      for (int64_t m = 0; m < group; ++m) total += head_self[first_head + m];
      new_prob->data<float>()[bg] = total;
    }
  }
}

}  // namespace h2oflex::cpu
