// Scalar conversions between fp32 and the 16-bit float formats.
#pragma once

#include <cstdint>
#include <cstring>

namespace h2oflex {

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even; NaN stays NaN. Written as a select rather than an early return so that
// loops over it vectorize.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t quiet_nan = static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint16_t rounded = static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  return (bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Bulk conversions on the calling thread, vectorized where the compiler can.
void convert_bf16_to_f32(const uint16_t* src, float* dst, size_t n);
void convert_f32_to_bf16(const float* src, uint16_t* dst, size_t n);
void convert_f16_to_f32(const uint16_t* src, float* dst, size_t n);
void convert_f32_to_f16(const float* src, uint16_t* dst, size_t n);

// `rows` rows of d f32 values (row stride `stride`) rounded to bf16 into dst (row stride d), then
// zero rows up to `padded`: the padding of a tile-shaped operand (a zero key scores 0, a zero
// value adds nothing, never NaN).
void convert_rows_f32_to_bf16(const float* src, int64_t stride, int64_t rows, int64_t padded,
                              int64_t d, uint16_t* dst);

}  // namespace h2oflex
