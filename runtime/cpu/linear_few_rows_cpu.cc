// A decode step multiplies a few rows (the batch) by every weight once. The library's bf16 matmul
// prepares the weights for a reuse that a few rows never make, and reached about 100 GFLOP/s at
// M = 8 on a 2-core AMD EPYC with AVX512-BF16 (a decode step of OPT-1.3B took 0.21 s, where
// streaming its 2.6 GB of weights takes about 0.1 s). This kernel reads each weight once and
// multiplies it into every input row with the AVX512-BF16 pair dot product (vdpbf16ps: two exact
// bf16 products added to an f32 lane per instruction), the accumulators in registers.
#include "runtime/cpu/linear_few_rows.h"

#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/cpu/avx512_bf16.h"
#include "runtime/cpu/lane_sums_avx512.h"

namespace h2oflex::cpu {

#if defined(__x86_64__)
namespace {

// Output rows per task: enough to amortise the scheduling, few enough to balance two threads
// over the 2048 rows of a small model's projection.
constexpr int64_t kRowsPerTask = 64;
constexpr int64_t kPairLanes = 32;  // bf16 values in one 512-bit vector
// Input rows one pass over the weights takes (rows_range keeps at least two weight rows'
// accumulators in the registers up to here); more are taken in two halves. Measured on OPT-1.3B
// decode steps: 12 rows in one pass (two weight rows at a time) beat two halves of 6 by 10%; 16
// rows in halves of 8 beat one pass (one weight row at a time) by 1.3x.
constexpr int64_t kRowsInOnePass = 14;
// Weight rows each half goes over in turn when the input is halved.
constexpr int64_t kRowsPerPiece = 16;
static_assert((kFewRowsBf16 + 1) / 2 <= kRowsInOnePass, "a half must fit one pass");

// One block of 32 values at t of R weight rows and M input rows into the accumulators; the
// last block of a weight row may be short (kShort: its missing values read as zeros; the
// blocked input is zero there already).
template <int M, int R, bool kShort>
H2OFLEX_BF16_TARGET __attribute__((always_inline)) inline void block_step(
    const uint16_t* xb, int64_t k, const uint16_t* w, int64_t j, int64_t t, __mmask32 mask,
    __m512 (&acc)[R][M]) {
  __m512i wv[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    const uint16_t* p = w + (j + r) * k + t;
    wv[r] = kShort ? _mm512_maskz_loadu_epi16(mask, p) : _mm512_loadu_si512(p);
    // The same place in the next rows: the hardware prefetcher alone kept one core at about
    // half the rate memory gives it. Into L2, not L1: at 8 rows of k = 2048 the blocked input
    // is 32 KiB, all of L1, and weights fetched into L1 ahead of use evicted it (24 layers of
    // OPT-1.3B's GEMMs at 8 rows, three interleaved rounds: 0.116-0.124 s -> 0.091-0.108 s;
    // 1 and 4 rows 23-25 -> 27-32 GB/s of weights).
    _mm_prefetch(reinterpret_cast<const char*>(p + R * k), _MM_HINT_T1);
  }
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
    const __m512i xv = _mm512_loadu_si512(xb + (t * M + i * kPairLanes));
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      acc[r][i] = _mm512_dpbf16_ps(acc[r][i], reinterpret_cast<__m512bh>(xv),
                                   reinterpret_cast<__m512bh>(wv[r]));
    }
  }
}

// R weight rows j .. j + R against M input rows: each (input row, output row) keeps 16 f32
// lanes, lane l adding the products of the values 2l and 2l + 1 of every block of 32, in order
// of the blocks, then the lanes are summed in a fixed tree. The loops over M and R are unrolled
// so that the R x M accumulators stay in registers.
template <int M, int R>
H2OFLEX_BF16_TARGET __attribute__((always_inline)) inline void rows_block(
    const uint16_t* xb, int64_t k, const uint16_t* w, int64_t j, float (&sums)[R][M]) {
  __m512 acc[R][M];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps();
  }
  const int64_t full = k / kPairLanes * kPairLanes;
  for (int64_t t = 0; t < full; t += kPairLanes) {
    block_step<M, R, false>(xb, k, w, j, t, 0, acc);
  }
  if (full < k) {
    const auto mask = static_cast<__mmask32>((uint64_t{1} << (k - full)) - 1);
    block_step<M, R, true>(xb, k, w, j, full, mask, acc);
  }
  // The lanes summed 16 accumulators at a time (padded with zeros), in the tree a scalar halving
  // loop takes. One accumulator at a time through memory, the sums cost a third as much again as
  // the whole pass over a row of 2048 weights at 8 input rows.
  constexpr int kAcc = R * M, kVectors = (kAcc + 15) / 16;
  __m512 flat[kVectors * 16];
#pragma GCC unroll 16
  for (int a = 0; a < kVectors * 16; ++a) {
    flat[a] = a < kAcc ? acc[a / M][a % M] : _mm512_setzero_ps();
  }
  alignas(64) float lanes[kVectors * 16];
#pragma GCC unroll 4
  for (int g = 0; g < kVectors; ++g) {
    _mm512_store_ps(lanes + g * 16,
                    lane_sums16(reinterpret_cast<const __m512(&)[16]>(flat[g * 16])));
  }
  for (int a = 0; a < kAcc; ++a) sums[a / M][a % M] = lanes[a];
}

template <int M>
H2OFLEX_BF16_TARGET __attribute__((always_inline)) inline void rows_range(
    const uint16_t* xb, int64_t k, const uint16_t* w, int64_t j0, int64_t j1, const float* bias,
    float* out, int64_t ldo, bool relu) {
  // R weight rows at a time share each load of the inputs: every load of an input block feeds
  // R dot products, so fewer rows re-read the input more often. R is as large as the R x M
  // accumulators, the R weight vectors and one input vector allow in the 32 vector registers.
  constexpr int R = M <= 6 ? 4 : M <= 8 ? 3 : 2;
  const auto emit = [&](int64_t j, float v) {
    if (bias != nullptr) v += bias[j];
    return relu ? std::max(v, 0.0f) : v;
  };
  int64_t j = j0;
  for (; j + R <= j1; j += R) {
    float sums[R][M];
    rows_block<M, R>(xb, k, w, j, sums);
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < M; ++i) out[i * ldo + j + r] = emit(j + r, sums[r][i]);
    }
  }
  for (; j < j1; ++j) {
    float sums[1][M];
    rows_block<M, 1>(xb, k, w, j, sums);
    for (int i = 0; i < M; ++i) out[i * ldo + j] = emit(j, sums[0][i]);
  }
}

// The row count as a template argument, so the accumulators are registers.
H2OFLEX_BF16_TARGET void rows_task(const uint16_t* xb, int64_t m, int64_t k, const uint16_t* w,
                                   int64_t j0, int64_t j1, const float* bias, float* out,
                                   int64_t ldo, bool relu) {
  switch (m) {
#define H2OFLEX_FEW_ROWS_CASE(M) \
  case M:                        \
    return rows_range<M>(xb, k, w, j0, j1, bias, out, ldo, relu);
    H2OFLEX_FEW_ROWS_CASE(1)
    H2OFLEX_FEW_ROWS_CASE(2)
    H2OFLEX_FEW_ROWS_CASE(3)
    H2OFLEX_FEW_ROWS_CASE(4)
    H2OFLEX_FEW_ROWS_CASE(5)
    H2OFLEX_FEW_ROWS_CASE(6)
    H2OFLEX_FEW_ROWS_CASE(7)
    H2OFLEX_FEW_ROWS_CASE(8)
    H2OFLEX_FEW_ROWS_CASE(9)
    H2OFLEX_FEW_ROWS_CASE(10)
    H2OFLEX_FEW_ROWS_CASE(11)
    H2OFLEX_FEW_ROWS_CASE(12)
    H2OFLEX_FEW_ROWS_CASE(13)
    H2OFLEX_FEW_ROWS_CASE(14)
#undef H2OFLEX_FEW_ROWS_CASE
    default:  // the caller checked m
      return;
  }
}

// The input in blocks of 32 values, each block's M rows side by side ([k / 32][M][32], the last
// block zero-padded): a block's loads are one contiguous run. Row by row, M rows of k = 2048
// bf16 values lie 4 KiB apart and all fall in the same set of the L1 cache, which evicted them
// on every block (M = 8 ran at a quarter of the speed, M = 16 at a twentieth).
const uint16_t* blocked_input(const uint16_t* x16, int64_t m, int64_t k,
                              std::vector<uint16_t>& buf) {
  const int64_t blocks = (k + kPairLanes - 1) / kPairLanes;
  buf.assign(static_cast<size_t>(blocks * m * kPairLanes), 0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t t = 0; t < k; ++t) {
      buf[static_cast<size_t>((t / kPairLanes * m + i) * kPairLanes + t % kPairLanes)] =
          x16[i * k + t];
    }
  }
  return buf.data();
}

}  // namespace

bool few_rows_bf16_available() {
  return cpu_has_avx512_bf16();
}

void linear_few_rows_bf16(const uint16_t* x16, int64_t m, int64_t k,
                          std::span<const FewRowsProduct> products) {
  H2OFLEX_CHECK(m >= 1 && m <= kFewRowsBf16, "linear_few_rows_bf16: ", m, " rows");
  H2OFLEX_CHECK(few_rows_bf16_available(), "linear_few_rows_bf16: this CPU has no AVX512-BF16");
  // Above kRowsInOnePass rows, one pass over the weights could keep only one weight row's
  // accumulators in the registers, and every input block would be loaded once per weight row.
  // The rows are taken in two halves instead, each with several weight rows per pass, over
  // pieces of kRowsPerPiece weight rows small enough (k = 8192: 256 KiB) that the second half
  // reads them from L2, not from memory.
  const int64_t m1 = m > kRowsInOnePass ? (m + 1) / 2 : m, m2 = m - m1;
  thread_local std::vector<uint16_t> first_rows, second_rows;
  const uint16_t* xb1 = blocked_input(x16, m1, k, first_rows);
  const uint16_t* xb2 = m2 > 0 ? blocked_input(x16 + m1 * k, m2, k, second_rows) : nullptr;
  // Tasks of kRowsPerTask output rows, numbered across the products in order.
  std::vector<int64_t> first_task(products.size() + 1, 0);
  for (size_t i = 0; i < products.size(); ++i) {
    first_task[i + 1] = first_task[i] + (products[i].n + kRowsPerTask - 1) / kRowsPerTask;
  }
  const int64_t tasks = first_task.back();
#pragma omp parallel for schedule(static) if (tasks > 1 && omp_in_parallel() == 0)
  for (int64_t task = 0; task < tasks; ++task) {
    const size_t i = static_cast<size_t>(
        std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1);
    const FewRowsProduct& pr = products[i];
    const int64_t j0 = (task - first_task[i]) * kRowsPerTask,
                  j1 = std::min(pr.n, j0 + kRowsPerTask);
    if (m2 == 0) {
      rows_task(xb1, m1, k, pr.w, j0, j1, pr.bias, pr.out, pr.ldo, pr.relu);
      continue;
    }
    for (int64_t p0 = j0; p0 < j1; p0 += kRowsPerPiece) {
      const int64_t p1 = std::min(j1, p0 + kRowsPerPiece);
      rows_task(xb1, m1, k, pr.w, p0, p1, pr.bias, pr.out, pr.ldo, pr.relu);
      rows_task(xb2, m2, k, pr.w, p0, p1, pr.bias, pr.out + m1 * pr.ldo, pr.ldo, pr.relu);
    }
  }
}

#else  // other architectures: the library's GEMM takes every input

bool few_rows_bf16_available() {
  return false;
}

void linear_few_rows_bf16(const uint16_t*, int64_t, int64_t, std::span<const FewRowsProduct>) {
  throw InternalError("linear_few_rows_bf16: not built for this architecture");
}

#endif

// One product: a list of one, on every architecture (the list form throws where unbuilt).
void linear_few_rows_bf16(const uint16_t* x16, int64_t m, int64_t k, const uint16_t* w, int64_t n,
                          const float* bias, float* out, int64_t ldo, bool relu) {
  const FewRowsProduct product{w, n, bias, out, ldo, relu};
  linear_few_rows_bf16(x16, m, k, std::span<const FewRowsProduct>(&product, 1));
}

}  // namespace h2oflex::cpu
