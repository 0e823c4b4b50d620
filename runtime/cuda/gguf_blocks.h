// GGUF's block formats one block at a time, compiled for both host and device: the decoders and
// packers behind the CUDA kernels (runtime/cuda/packed_rows.cu, the fused linear, the q8_0 KV
// slots), written so that a host build of this header gives the same bits as the CPU's rows
// (runtime/core/block_format.cc) and a test on the CPU checks that (tests/unit).
//
// Bit equality with the CPU: every decode is an exact product (an f16 scale times a code of at
// most 8 bits, or Q4_K's and Q6_K's f16 x 6/8-bit sub-scale times a 4/6-bit code: at most 24
// significant bits) followed by at most one rounded add, so neither a fused multiply-add nor
// the order of the products can change a value. The packers round in several steps; on the
// device they use the _rn intrinsics (one IEEE rounding each, never fused) in ggml's order, as
// the CPU computes them without contraction. The f16 conversions are round-to-nearest-even on
// both sides (NaN payloads aside: the values packed are finite).
#pragma once

#include <cstdint>

#include "runtime/core/storage_format.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define H2OFLEX_BLOCK_FN __host__ __device__ inline
#else
#define H2OFLEX_BLOCK_FN inline
#endif
#if !defined(__CUDA_ARCH__)
#include <cmath>

#include "runtime/core/half.h"
#endif

namespace h2oflex::gguf_blocks {

// One IEEE-rounded operation each (no contraction into a fused multiply-add on the device).
H2OFLEX_BLOCK_FN float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
H2OFLEX_BLOCK_FN float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
H2OFLEX_BLOCK_FN float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
H2OFLEX_BLOCK_FN float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
H2OFLEX_BLOCK_FN float abs_f(float a) {
#if defined(__CUDA_ARCH__)
  return fabsf(a);
#else
  return std::fabs(a);
#endif
}
// C's roundf: halfway cases away from zero (ggml's rounding of q8_0 codes).
H2OFLEX_BLOCK_FN float round_half_away(float a) {
#if defined(__CUDA_ARCH__)
  return roundf(a);
#else
  return std::roundf(a);
#endif
}

// The little-endian f16 at p, widened; and f stored there rounded to nearest even.
H2OFLEX_BLOCK_FN float load_f16(const uint8_t* p) {
  const auto bits = static_cast<uint16_t>(p[0] | (p[1] << 8));
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(bits));
#else
  return f16_to_f32(bits);
#endif
}
H2OFLEX_BLOCK_FN void store_f16(uint8_t* p, float f) {
#if defined(__CUDA_ARCH__)
  const uint16_t bits = __half_as_ushort(__float2half_rn(f));
#else
  const uint16_t bits = f32_to_f16(f);
#endif
  p[0] = static_cast<uint8_t>(bits & 0xff);
  p[1] = static_cast<uint8_t>(bits >> 8);
}

// Per format: kValues values in kBytes bytes a block; value(block, j) is value j of the block
// (0 <= j < kValues); pack(x, block) packs kValues values (the formats the CPU can pack).
template <PackedFormat F>
struct Block;

// Q8_0: f16 scale d, 32 int8 codes; value = q * d.
template <>
struct Block<PackedFormat::Q8_0> {
  static constexpr int kValues = 32, kBytes = 34;
  H2OFLEX_BLOCK_FN static float value(const uint8_t* b, int j) {
    return mul_rn(static_cast<float>(static_cast<int8_t>(b[2 + j])), load_f16(b));
  }
  H2OFLEX_BLOCK_FN static void pack(const float* x, uint8_t* b) {
    float amax = 0;
    for (int j = 0; j < kValues; ++j) {
      const float a = abs_f(x[j]);
      amax = amax < a ? a : amax;  // std::max's choice
    }
    const float d = div_rn(amax, 127.0f);
    const float id = d != 0 ? div_rn(1.0f, d) : 0.0f;
    store_f16(b, d);
    for (int j = 0; j < kValues; ++j) {
      b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(round_half_away(mul_rn(x[j], id))));
    }
  }
};

// Q4_0: f16 scale d, 16 bytes of nibbles (value j in the low nibble of byte j, value j + 16 in
// its high nibble); value = (q - 8) * d.
template <>
struct Block<PackedFormat::Q4_0> {
  static constexpr int kValues = 32, kBytes = 18;
  H2OFLEX_BLOCK_FN static float value(const uint8_t* b, int j) {
    const uint8_t byte = b[2 + (j & 15)];
    const int q = j < 16 ? (byte & 0x0F) : (byte >> 4);
    return mul_rn(static_cast<float>(q - 8), load_f16(b));
  }
  H2OFLEX_BLOCK_FN static void pack(const float* x, uint8_t* b) {
    float amax = 0, max = 0;  // the value of largest magnitude, with its sign (first one wins)
    for (int j = 0; j < kValues; ++j) {
      if (amax < abs_f(x[j])) {
        amax = abs_f(x[j]);
        max = x[j];
      }
    }
    const float d = div_rn(max, -8.0f);
    const float id = d != 0 ? div_rn(1.0f, d) : 0.0f;
    store_f16(b, d);
    for (int j = 0; j < kValues / 2; ++j) {
      const int lo = code(add_rn(mul_rn(x[j], id), 8.5f));
      const int hi = code(add_rn(mul_rn(x[j + kValues / 2], id), 8.5f));
      b[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
  // ggml's (int8_t) truncation of a code, capped at 15.
  H2OFLEX_BLOCK_FN static int code(float v) {
    const int c = static_cast<int>(static_cast<int8_t>(v));
    return c < 15 ? c : 15;
  }
};

// Q4_1: f16 scale d, f16 minimum m, nibbles as Q4_0; value = q * d + m.
template <>
struct Block<PackedFormat::Q4_1> {
  static constexpr int kValues = 32, kBytes = 20;
  H2OFLEX_BLOCK_FN static float value(const uint8_t* b, int j) {
    const uint8_t byte = b[4 + (j & 15)];
    const int q = j < 16 ? (byte & 0x0F) : (byte >> 4);
    return add_rn(mul_rn(static_cast<float>(q), load_f16(b)), load_f16(b + 2));
  }
  H2OFLEX_BLOCK_FN static void pack(const float* x, uint8_t* b) {
    float min = x[0], max = x[0];
    for (int j = 1; j < kValues; ++j) {
      min = x[j] < min ? x[j] : min;  // std::min's and std::max's choices
      max = max < x[j] ? x[j] : max;
    }
    const float d = div_rn(sub_rn(max, min), 15.0f);
    const float id = d != 0 ? div_rn(1.0f, d) : 0.0f;
    store_f16(b, d);
    store_f16(b + 2, min);
    for (int j = 0; j < kValues / 2; ++j) {
      const int lo = Block<PackedFormat::Q4_0>::code(add_rn(mul_rn(sub_rn(x[j], min), id), 0.5f));
      const int hi = Block<PackedFormat::Q4_0>::code(
          add_rn(mul_rn(sub_rn(x[j + kValues / 2], min), id), 0.5f));
      b[4 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
};

// Q4_K: f16 d and dmin, 12 bytes holding eight 6-bit (scale, min) pairs, 128 bytes of nibbles;
// sub-block s (32 values) is d * scale_s * q - dmin * min_s, and sub-blocks 2i and 2i + 1 take
// the low and high nibbles of bytes 32i .. 32i + 31.
template <>
struct Block<PackedFormat::Q4_K> {
  static constexpr int kValues = 256, kBytes = 144;
  H2OFLEX_BLOCK_FN static float value(const uint8_t* b, int j) {
    const int s = j / 32, l = j % 32;
    const uint8_t* sc = b + 4;
    int scale, min;
    if (s < 4) {
      scale = sc[s] & 63;
      min = sc[s + 4] & 63;
    } else {
      scale = (sc[s + 4] & 0x0F) | ((sc[s - 4] >> 6) << 4);
      min = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
    }
    const uint8_t byte = b[16 + 32 * (s / 2) + l];
    const int q = s % 2 == 0 ? (byte & 0x0F) : (byte >> 4);
    const float d = mul_rn(load_f16(b), static_cast<float>(scale));
    const float m = mul_rn(load_f16(b + 2), static_cast<float>(min));
    return sub_rn(mul_rn(d, static_cast<float>(q)), m);
  }
};

// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8 scales, f16 d; each
// 16 values share a scale; value = (d * scale) * (q - 32). Each half (128 values) takes 64 low
// bytes and 32 high bytes: value l + 32k of the half has its low nibble from byte l (k = 0, 2)
// or l + 32 (k = 1, 3), low half for k < 2, its top bits from bits 2k of high byte l, and scale
// l / 16 + 2k of the half's eight.
template <>
struct Block<PackedFormat::Q6_K> {
  static constexpr int kValues = 256, kBytes = 210;
  H2OFLEX_BLOCK_FN static float value(const uint8_t* b, int j) {
    const int half = j / 128, k = (j % 128) / 32, l = j % 32;
    const uint8_t* ql = b + 64 * half;
    const uint8_t* qh = b + 128 + 32 * half;
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * half);
    const uint8_t low = ql[l + 32 * (k & 1)];
    const int q = ((k < 2 ? low & 0x0F : low >> 4) | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
    return mul_rn(mul_rn(load_f16(b + 208), static_cast<float>(sc[l / 16 + 2 * k])),
                  static_cast<float>(q));
  }
};

// Value t of the values stored in whole blocks of F from `blocks` on: a row of packed values, or
// rows of whole blocks back to back (value t of row-major [rows, n] when n is a multiple of
// kValues). The one rule every kernel indexes packed rows by.
template <PackedFormat F>
H2OFLEX_BLOCK_FN float row_value(const uint8_t* blocks, uint64_t t) {
  using B = Block<F>;
  return B::value(blocks + t / B::kValues * B::kBytes, static_cast<int>(t % B::kValues));
}

}  // namespace h2oflex::gguf_blocks
