// Decode attention reads every cached K and V row of a head once per step, a stream as long as
// a quarter of the weights' at 8 x (512 + 32). Written as a dot product and a weighted sum per
// row, the compiler's loops reduced each score across the vector (a dozen dependent operations)
// and kept the weighted sum in memory: about 90 cycles a (K, V) row pair on a 2-core AMD EPYC,
// a fifth of a decode step of OPT-1.3B. Here the scores of 16 rows are reduced together
// (lane_sums16) and the weighted sum stays in registers. A bf16 row is widened by shifts and masks
// in place, its even and odd values in two vectors, the query and the sum split the same way.
#include "runtime/cpu/attend_slots_avx512.h"

#if defined(__x86_64__)
// GCC 12's reduce intrinsics start from an "undefined" vector written as a self-initialised
// variable, which its own -Wuninitialized then reports at every use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

#include <limits>

#include "runtime/core/error.h"
#include "runtime/cpu/lane_sums_avx512.h"
#include "runtime/cpu/softmax_rows.h"

namespace h2oflex::cpu {

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

#define H2OFLEX_AVX512_TARGET __attribute__((target("avx512f")))

constexpr int kGroup = 16;  // slots whose scores are reduced together: one vector of scores
// Rows of a head are one sequential stream; touched this many rows ahead (the hardware
// prefetcher alone left decode attention reading below the weights' rate).
constexpr int64_t kPrefetchRows = 32;

// Chunk c (32 values) of a row as two f32 vectors: for bf16, its even and odd values (a bf16 is
// the high half of an f32); for f32, its first and second 16.
template <bool kBf16>
H2OFLEX_AVX512_TARGET __attribute__((always_inline)) inline void load_chunk(const void* row, int c,
                                                                            __m512& a, __m512& b) {
  if constexpr (kBf16) {
    const __m512i x = _mm512_loadu_si512(static_cast<const char*>(row) + c * 64);
    a = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    b = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  } else {
    const float* f = static_cast<const float*>(row) + c * 32;
    a = _mm512_loadu_ps(f);
    b = _mm512_loadu_ps(f + 16);
  }
}

H2OFLEX_AVX512_TARGET __attribute__((always_inline)) inline void prefetch_rows(const char* first,
                                                                               int64_t bytes) {
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(first + off, _MM_HINT_T0);
}

template <int D, bool kBf16>
H2OFLEX_AVX512_TARGET float attend(const float* q, const void* k, const void* v, const int32_t* pos,
                                   float self, float scale, const float* v_new, int64_t cap,
                                   float* p, float* acc) {
  constexpr int C = D / 32;  // chunks of 32 values per row
  constexpr int64_t kRowBytes = D * (kBf16 ? 2 : 4);
  const char* kb = static_cast<const char*>(k);
  const char* vb = static_cast<const char*>(v);
  // The query split as the rows are.
  __m512 qa[C], qb[C];
  for (int c = 0; c < C; ++c) {
    if constexpr (kBf16) {
      alignas(64) float even[16], odd[16];
      for (int l = 0; l < 16; ++l) {
        even[l] = q[c * 32 + 2 * l];
        odd[l] = q[c * 32 + 2 * l + 1];
      }
      qa[c] = _mm512_load_ps(even);
      qb[c] = _mm512_load_ps(odd);
    } else {
      qa[c] = _mm512_loadu_ps(q + c * 32);
      qb[c] = _mm512_loadu_ps(q + c * 32 + 16);
    }
  }
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512i zero = _mm512_setzero_si512();
  // Scores, 16 slots at a time; a short last group is padded with zero rows so that every slot's
  // score is summed in the same order.
  __m512 mx = _mm512_set1_ps(self);
  for (int64_t j0 = 0; j0 < cap; j0 += kGroup) {
    const int n = static_cast<int>(cap - j0 < kGroup ? cap - j0 : kGroup);
    const __mmask16 live = static_cast<__mmask16>((1u << n) - 1);
    prefetch_rows(kb + (j0 + kPrefetchRows) * kRowBytes, kGroup * kRowBytes);
    __m512 s[kGroup];
#pragma GCC unroll 16
    for (int r = 0; r < kGroup; ++r) {
      s[r] = _mm512_setzero_ps();
      if (r >= n) continue;
      const char* row = kb + (j0 + r) * kRowBytes;
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        __m512 a, b;
        load_chunk<kBf16>(row, c, a, b);
        s[r] = _mm512_fmadd_ps(a, qa[c], s[r]);
        s[r] = _mm512_fmadd_ps(b, qb[c], s[r]);
      }
    }
    const __mmask16 filled =
        _mm512_mask_cmpge_epi32_mask(live, _mm512_maskz_loadu_epi32(live, pos + j0), zero);
    const __m512 scores =
        _mm512_mask_mov_ps(neg_inf, filled, _mm512_mul_ps(lane_sums16(s), _mm512_set1_ps(scale)));
    _mm512_mask_storeu_ps(p + j0, live, scores);
    mx = _mm512_max_ps(mx, scores);
  }
  const float m = _mm512_reduce_max_ps(mx);
  self = exp_approx(self - m);
  const float inv = 1.0f / (self + exp_shifted_sum(p, cap, m));
  // The weighted sum of the filled slots' value rows.
  __m512 sa[C], sb[C];
  for (int c = 0; c < C; ++c) sa[c] = sb[c] = _mm512_setzero_ps();
  for (int64_t j0 = 0; j0 < cap; j0 += kGroup) {
    const int n = static_cast<int>(cap - j0 < kGroup ? cap - j0 : kGroup);
    const __mmask16 live = static_cast<__mmask16>((1u << n) - 1);
    prefetch_rows(vb + (j0 + kPrefetchRows) * kRowBytes, kGroup * kRowBytes);
    const __mmask16 filled =
        _mm512_mask_cmpge_epi32_mask(live, _mm512_maskz_loadu_epi32(live, pos + j0), zero);
    const __m512 probs =
        _mm512_maskz_mul_ps(filled, _mm512_maskz_loadu_ps(live, p + j0), _mm512_set1_ps(inv));
    _mm512_mask_storeu_ps(p + j0, live, probs);
    alignas(64) float w[kGroup];
    _mm512_store_ps(w, probs);
    for (int r = 0; r < n; ++r) {
      if (((filled >> r) & 1) == 0) continue;  // an empty slot's row may hold anything
      const char* row = vb + (j0 + r) * kRowBytes;
      const __m512 wr = _mm512_set1_ps(w[r]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        __m512 a, b;
        load_chunk<kBf16>(row, c, a, b);
        sa[c] = _mm512_fmadd_ps(a, wr, sa[c]);
        sb[c] = _mm512_fmadd_ps(b, wr, sb[c]);
      }
    }
  }
  self *= inv;
  for (int c = 0; c < C; ++c) {
    if constexpr (kBf16) {  // interleave the even and odd values back
      const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i hi =
          _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      _mm512_storeu_ps(acc + c * 32, _mm512_permutex2var_ps(sa[c], lo, sb[c]));
      _mm512_storeu_ps(acc + c * 32 + 16, _mm512_permutex2var_ps(sa[c], hi, sb[c]));
    } else {
      _mm512_storeu_ps(acc + c * 32, sa[c]);
      _mm512_storeu_ps(acc + c * 32 + 16, sb[c]);
    }
  }
  for (int i = 0; i < D; ++i) acc[i] += self * v_new[i];
  return self;
}

}  // namespace

bool attend_slots_avx512_takes(int64_t d) {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available && (d == 64 || d == 128);
}

float attend_slots_avx512(const float* q, const void* k, const void* v, bool bf16,
                          const int32_t* pos, float self, float scale, const float* v_new,
                          int64_t cap, int64_t d, float* p, float* acc) {
  H2OFLEX_CHECK(attend_slots_avx512_takes(d), "attend_slots_avx512: d = ", d, " on this CPU");
  if (d == 64) {
    return bf16 ? attend<64, true>(q, k, v, pos, self, scale, v_new, cap, p, acc)
                : attend<64, false>(q, k, v, pos, self, scale, v_new, cap, p, acc);
  }
  return bf16 ? attend<128, true>(q, k, v, pos, self, scale, v_new, cap, p, acc)
              : attend<128, false>(q, k, v, pos, self, scale, v_new, cap, p, acc);
}

#else  // other architectures and compilers: the portable loops in attention_cpu.cc

bool attend_slots_avx512_takes(int64_t) {
  return false;
}

float attend_slots_avx512(const float*, const void*, const void*, bool, const int32_t*, float,
                          float, const float*, int64_t, int64_t, float*, float*) {
  throw InternalError("attend_slots_avx512: not built for this architecture");
}

#endif

}  // namespace h2oflex::cpu
