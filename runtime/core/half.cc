#include "runtime/core/half.h"

#include <algorithm>
#include <cmath>

#include "runtime/core/vector_clones.h"

namespace h2oflex {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | ((127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflow -> inf (rounds past 65504)
  if (abs < 0x38800000u) {                        // subnormal or zero in f16
    if (abs < 0x33000000u) return sign;           // below half the smallest subnormal
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (112 - e) + ... yields 13..24
    uint32_t half_m = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1u))) ++half_m;
    return sign | static_cast<uint16_t>(half_m);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  r += 0xfffu + ((r >> 13) & 1u);  // round to nearest even
  return sign | static_cast<uint16_t>(r >> 13);
}

void convert_bf16_to_f32(const uint16_t* src, float* dst, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

// Compiled for the widest vectors the CPU has: it rounds every 16-bit GEMM's input.
H2OFLEX_VECTOR_CLONES void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

void convert_rows_f32_to_bf16(const float* src, int64_t stride, int64_t rows, int64_t padded,
                              int64_t d, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    convert_f32_to_bf16(src + r * stride, dst + r * d, static_cast<size_t>(d));
  }
  std::fill(dst + rows * d, dst + padded * d, uint16_t{0});
}

void convert_f16_to_f32(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void convert_f32_to_f16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

}  // namespace h2oflex
