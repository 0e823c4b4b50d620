#include "runtime/cpu/softmax_rows.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "runtime/core/half.h"
#include "runtime/core/vector_clones.h"

namespace h2oflex::cpu {

namespace {

// The exponent field of 2^n for an integer-valued n in [-126, 128).
inline float pow2(float n) {
  return std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
}

inline float exp_inline(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  // ln 2 split so n * kLn2Hi is exact for the n that occur.
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kLowest = -87.3365447f;  // e^x below the smallest normal float: 0
  constexpr float kHighest = 88.7228391f;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // Selects, not branches, so the loops that call this vectorise.
  float xc = x < kLowest ? kLowest : x;
  xc = xc > kHighest ? kHighest : xc;
  const float n = static_cast<float>(static_cast<int32_t>(xc * kLog2e + (xc < 0 ? -0.5f : 0.5f)));
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = (p * r) * r + r + 1.0f;
  // n reaches 128 at the top of the range: scale in two halves.
  const float half = static_cast<float>(static_cast<int32_t>(n) / 2);
  float value = p * pow2(half) * pow2(n - half);
  value *=
      static_cast<float>(x >= kLowest);  // 0 below the range (a select here would not vectorise)
  value = x > kHighest ? kInf : value;
  return x != x ? x : value;  // NaN stays NaN
}

}  // namespace

float exp_approx(float x) {
  return exp_inline(x);
}

H2OFLEX_VECTOR_CLONES float exp_shifted_sum(float* p, int64_t n, float shift) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) p[j] = exp_inline(p[j] - shift);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += p[j];  // in index order: see the header
  return sum;
}

H2OFLEX_VECTOR_CLONES void softmax_causal_row(float* p, int64_t valid, int64_t n, double* col) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < valid; ++j) mx = p[j] > mx ? p[j] : mx;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < valid; ++j) {
    p[j] = exp_inline(p[j] - mx);
    sum += p[j];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < valid; ++j) p[j] *= inv;
  std::fill(p + valid, p + n, 0.0f);
  if (col == nullptr) return;
#pragma omp simd
  for (int64_t j = 0; j < valid; ++j) col[j] += p[j];
}

H2OFLEX_VECTOR_CLONES void softmax_scaled_row_bf16(float* s, int64_t valid, int64_t n, float scale,
                                                   double* col, uint16_t* p16) {
  // The loops run to a multiple of 16 values, the padding scored -inf (its exponential is 0), so
  // the vectorised loops never fall into their scalar remainders: with rows of a few hundred
  // values those remainders, the exponential's above all, took as long as the vector bodies.
  const int64_t width = (valid + 15) / 16 * 16;
  std::fill(s + valid, s + width, -std::numeric_limits<float>::infinity());
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < width; ++j) mx = s[j] * scale > mx ? s[j] * scale : mx;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < width; ++j) {
    s[j] = exp_inline(s[j] * scale - mx);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < width; ++j) {
    const float p = s[j] * inv;
    col[j] += p;
    p16[j] = f32_to_bf16(p);
  }
  std::fill(p16 + width, p16 + n, uint16_t{0});
}

}  // namespace h2oflex::cpu
