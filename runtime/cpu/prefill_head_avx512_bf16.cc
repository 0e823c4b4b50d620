// A prefill head's two products through the library's bf16 matmul, one call per block of 64
// queries, ran at about half the CPU's pair-dot-product rate on a 2-core AMD EPYC: the blocks'
// short inner dimension (64 for the scores) leaves the packing of each call a large share. Here
// a head's operands are packed once, in the layouts vdpbf16ps reads (pairs of adjacent values in
// one 32-bit lane), and each tile of scores or outputs is summed in registers:
//  - scores: 8 queries x 32 keys, the query's pair (t, t + 1) broadcast against the pairs
//    (k[j][t], k[j][t + 1]) of 32 keys, over the d / 2 pairs;
//  - outputs: 4 queries x 64 values (2 x 128 for d = 128), the probabilities' pair (j, j + 1)
//    broadcast against (v[j][t], v[j + 1][t]) of 16 values t, over the key pairs the rows see.
// The softmax between them is the shared f32 one (softmax_rows.h), so the column sums H2O keeps
// are the same whichever kernel produced the scores.
#include "runtime/cpu/prefill_head_avx512_bf16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/half.h"
#include "runtime/cpu/avx512_bf16.h"
#include "runtime/cpu/softmax_rows.h"

namespace h2oflex::cpu {

#if defined(H2OFLEX_BF16_TARGET)
namespace {

constexpr int64_t kRows = 8;   // queries per tile of scores
constexpr int64_t kKeys = 32;  // keys per tile of scores: two vectors of 16 lanes

int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

// One thread's packed operands of a head of `len` positions.
struct Packed {
  int64_t len = 0, d = 0, rows = 0, keys = 0;  // rows: len rounded to kRows; keys: to kKeys
  std::vector<uint16_t> q;                     // [rows][d] bf16, zero rows past len
  std::vector<uint32_t> k;                     // [d / 2][keys]: (k[j][2t], k[j][2t + 1])
  std::vector<uint32_t> v;                     // [keys / 2][d]: (v[2j][t], v[2j + 1][t])
  std::vector<uint16_t> row16;                 // [keys][d] bf16: k or v rounded, before packing
  std::vector<float> scores;                   // [kRows][keys]
  std::vector<uint16_t> p;                     // [kRows][keys] bf16 probabilities
};

uint32_t load_pair(const uint16_t* at) {
  uint32_t pair;
  std::memcpy(&pair, at, sizeof pair);
  return pair;
}

void pack(const float* q, const float* k, const float* v, int64_t len, int64_t d, int64_t q_stride,
          int64_t kv_stride, Packed& t) {
  t.len = len;
  t.d = d;
  t.rows = round_up(len, kRows);
  t.keys = round_up(len, kKeys);
  const int64_t pairs = d / 2;
  t.q.resize(static_cast<size_t>(t.rows * d));
  t.k.resize(static_cast<size_t>(pairs * t.keys));
  t.v.resize(static_cast<size_t>(t.keys / 2 * d));
  t.row16.resize(static_cast<size_t>(t.keys * d));
  t.scores.resize(static_cast<size_t>(kRows * t.keys));
  t.p.resize(t.scores.size());
  convert_rows_f32_to_bf16(q, q_stride, len, t.rows, d, t.q.data());
  // K: each key's row of pairs becomes a column.
  convert_rows_f32_to_bf16(k, kv_stride, len, t.keys, d, t.row16.data());
  for (int64_t j = 0; j < t.keys; ++j) {
    const uint16_t* row = t.row16.data() + j * d;
    for (int64_t p = 0; p < pairs; ++p) t.k[p * t.keys + j] = load_pair(row + 2 * p);
  }
  // V: rows 2j and 2j + 1 interleaved.
  convert_rows_f32_to_bf16(v, kv_stride, len, t.keys, d, t.row16.data());
  for (int64_t jp = 0; jp < t.keys / 2; ++jp) {
    const uint16_t* even = t.row16.data() + 2 * jp * d;
    const uint16_t* odd = even + d;
    uint32_t* dst = t.v.data() + jp * d;
    for (int64_t i = 0; i < d; ++i) dst[i] = uint32_t{even[i]} | (uint32_t{odd[i]} << 16);
  }
}

// scores[r][j] = q[r0 + r] · k[j] for the kRows queries from r0 and keys j < n (a multiple of
// kKeys).
H2OFLEX_BF16_TARGET void scores_tile(const Packed& t, int64_t r0, int64_t n, float* scores) {
  const int64_t pairs = t.d / 2;
  const uint16_t* q = t.q.data() + r0 * t.d;
  for (int64_t j0 = 0; j0 < n; j0 += kKeys) {
    __m512 acc[kRows][2];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    const uint32_t* kp = t.k.data() + j0;
    for (int64_t p = 0; p < pairs; ++p, kp += t.keys) {
      const __m512i k0 = _mm512_loadu_si512(kp), k1 = _mm512_loadu_si512(kp + 16);
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m512i qp = _mm512_set1_epi32(static_cast<int>(load_pair(q + r * t.d + 2 * p)));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], reinterpret_cast<__m512bh>(qp),
                                     reinterpret_cast<__m512bh>(k0));
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], reinterpret_cast<__m512bh>(qp),
                                     reinterpret_cast<__m512bh>(k1));
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      _mm512_storeu_ps(scores + r * t.keys + j0, acc[r][0]);
      _mm512_storeu_ps(scores + r * t.keys + j0 + 16, acc[r][1]);
    }
  }
}

// out rows (stride ldo) of R queries = Σ over key pairs jp < pairs of P[r][2jp..2jp+1] ·
// v[2jp..2jp+1], for D values (16 per vector): R x D / 16 accumulators.
template <int R, int D>
H2OFLEX_BF16_TARGET void weighted_sum_tile(const Packed& t, const uint16_t* p, int64_t pairs,
                                           int64_t rows, float* out, int64_t ldo) {
  constexpr int kVectors = D / 16;
  __m512 acc[R][kVectors];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < kVectors; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  const uint32_t* vp = t.v.data();
  for (int64_t jp = 0; jp < pairs; ++jp, vp += D) {
    __m512i vv[kVectors];
#pragma GCC unroll 8
    for (int c = 0; c < kVectors; ++c) vv[c] = _mm512_loadu_si512(vp + 16 * c);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i pp = _mm512_set1_epi32(static_cast<int>(load_pair(p + r * t.keys + 2 * jp)));
#pragma GCC unroll 8
      for (int c = 0; c < kVectors; ++c) {
        acc[r][c] = _mm512_dpbf16_ps(acc[r][c], reinterpret_cast<__m512bh>(pp),
                                     reinterpret_cast<__m512bh>(vv[c]));
      }
    }
  }
  for (int r = 0; r < R && r < rows; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < kVectors; ++c) _mm512_storeu_ps(out + r * ldo + 16 * c, acc[r][c]);
  }
}

template <int D>
void weighted_sums(const Packed& t, int64_t r0, int64_t n, float* out, int64_t ldo) {
  constexpr int R = 256 / D;  // 16 accumulators
  for (int64_t r = 0; r < kRows && r0 + r < t.len; r += R) {
    // These rows see keys up to r0 + r + R - 1: pairs up to there (P is 0 past each row's own).
    const int64_t pairs = std::min(n, round_up(r0 + r + R, 2)) / 2;
    weighted_sum_tile<R, D>(t, t.p.data() + r * t.keys, pairs, t.len - (r0 + r), out + r * ldo,
                            ldo);
  }
}

}  // namespace

bool prefill_head_avx512_bf16_takes(int64_t d) {
  return (d == 64 || d == 128) && cpu_has_avx512_bf16();
}

void prefill_head_avx512_bf16(const float* q, const float* k, const float* v, float* out,
                              int64_t len, int64_t d, int64_t q_stride, int64_t kv_stride,
                              float scale, double* col) {
  H2OFLEX_CHECK(prefill_head_avx512_bf16_takes(d), "prefill_head_avx512_bf16: head size ", d,
                " on this CPU");
  thread_local Packed t;
  pack(q, k, v, len, d, q_stride, kv_stride, t);
  for (int64_t r0 = 0; r0 < len; r0 += kRows) {
    // Query r0 + r sees keys [0, r0 + r]: the tile's keys, rounded up to whole tiles of keys.
    const int64_t n = std::min(t.keys, round_up(r0 + kRows, kKeys));
    scores_tile(t, r0, n, t.scores.data());
    for (int64_t r = 0; r < kRows && r0 + r < len; ++r) {
      softmax_scaled_row_bf16(t.scores.data() + r * t.keys, r0 + r + 1, n, scale, col,
                              t.p.data() + r * t.keys);
    }
    if (d == 64) {
      weighted_sums<64>(t, r0, n, out + r0 * q_stride, q_stride);
    } else {
      weighted_sums<128>(t, r0, n, out + r0 * q_stride, q_stride);
    }
  }
}

#else

bool prefill_head_avx512_bf16_takes(int64_t) {
  return false;
}

void prefill_head_avx512_bf16(const float*, const float*, const float*, float*, int64_t, int64_t,
                              int64_t, int64_t, float, double*) {
  throw InternalError("prefill_head_avx512_bf16: not built for this architecture");
}

#endif

}  // namespace h2oflex::cpu
