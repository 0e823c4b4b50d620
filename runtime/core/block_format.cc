#include "runtime/core/block_format.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>

#include "runtime/core/half.h"

// The values must be the ones ggml and the `gguf` package compute, bit for bit: each is computed
// in ggml's order of operations (Q6_K's (d * scale) * q rounds twice, and that order is kept).
// Products of an f16 scale and small integers are exact in f32, so a fused multiply-add in
// `d * q + m` could not change a result.

namespace h2oflex {
namespace {

constexpr uint32_t kQK = 32;    // values per block of the simple formats
constexpr uint32_t kQKK = 256;  // values per super-block of the K formats

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
float load_f16(const uint8_t* p) {
  return f16_to_f32(load_u16(p));
}
void store_f16(uint8_t* p, float f) {
  const uint16_t h = f32_to_f16(f);
  std::memcpy(p, &h, 2);
}

void unpack_f32(const uint8_t* src, float* dst, size_t n) {
  std::memcpy(dst, src, n * 4);
}
void pack_f32(const float* src, uint8_t* dst, size_t n) {
  std::memcpy(dst, src, n * 4);
}
void unpack_f16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = load_f16(src + 2 * i);
}
void pack_f16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_f16(dst + 2 * i, src[i]);
}
void unpack_bf16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
}
void pack_bf16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

// Q8_0: f16 scale d, 32 int8 q; value = q * d.
void unpack_q8_0(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += 34, dst += kQK) {
    const float d = load_f16(src);
    for (uint32_t j = 0; j < kQK; ++j) dst[j] = static_cast<float>(int8_t(src[2 + j])) * d;
  }
}
void pack_q8_0(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kQK, dst += 34) {
    float amax = 0;
    for (uint32_t j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    for (uint32_t j = 0; j < kQK; ++j) dst[2 + j] = uint8_t(int8_t(std::roundf(src[j] * id)));
  }
}

// Q4_0: f16 scale d, 16 bytes of nibbles (value j in the low nibble of byte j, value j + 16 in
// its high nibble); value = (q - 8) * d.
void unpack_q4_0(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += 18, dst += kQK) {
    const float d = load_f16(src);
    for (uint32_t j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(int(src[2 + j] & 0x0F) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>(int(src[2 + j] >> 4) - 8) * d;
    }
  }
}
void pack_q4_0(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kQK, dst += 18) {
    float amax = 0, max = 0;  // the value of largest magnitude, with its sign (first one wins)
    for (uint32_t j = 0; j < kQK; ++j) {
      if (amax < std::fabs(src[j])) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    for (uint32_t j = 0; j < kQK / 2; ++j) {
      const int lo = std::min(15, int(int8_t(src[j] * id + 8.5f)));
      const int hi = std::min(15, int(int8_t(src[j + kQK / 2] * id + 8.5f)));
      dst[2 + j] = uint8_t(lo | (hi << 4));
    }
  }
}

// Q4_1: f16 scale d, f16 minimum m, nibbles as Q4_0; value = q * d + m.
void unpack_q4_1(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += 20, dst += kQK) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    for (uint32_t j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(src[4 + j] & 0x0F) * d + m;
      dst[j + kQK / 2] = static_cast<float>(src[4 + j] >> 4) * d + m;
    }
  }
}
void pack_q4_1(const float* src, uint8_t* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += kQK, dst += 20) {
    float min = src[0], max = src[0];
    for (uint32_t j = 1; j < kQK; ++j) {
      min = std::min(min, src[j]);
      max = std::max(max, src[j]);
    }
    const float d = (max - min) / 15;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    store_f16(dst, d);
    store_f16(dst + 2, min);
    for (uint32_t j = 0; j < kQK / 2; ++j) {
      const int lo = std::min(15, int(int8_t((src[j] - min) * id + 0.5f)));
      const int hi = std::min(15, int(int8_t((src[j + kQK / 2] - min) * id + 0.5f)));
      dst[4 + j] = uint8_t(lo | (hi << 4));
    }
  }
}

// Q4_K: f16 d and dmin, 12 bytes holding eight 6-bit (scale, min) pairs, 128 bytes of nibbles;
// sub-block s (32 values) is d * scale_s * q - dmin * min_s. Sub-blocks 2i and 2i + 1 take the
// low and high nibbles of bytes 32i .. 32i + 31.
void q4_k_scale_min(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = uint8_t((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}
void unpack_q4_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += 144) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* q = src + 16;
    for (int s = 0; s < 8; s += 2, q += 32) {
      uint8_t sc, m;
      q4_k_scale_min(s, scales, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      q4_k_scale_min(s + 1, scales, sc, m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      for (int l = 0; l < 32; ++l) *dst++ = d1 * float(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * float(q[l] >> 4) - m2;
    }
  }
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8 scales, f16 d; each
// 16 values share a scale; value = d * scale * (q - 32). Each half (128 values) takes 64 low
// bytes and 32 high bytes: value l + 32k of the half has its low nibble from byte l (k = 0, 2)
// or l + 32 (k = 1, 3), low half for k < 2, and its top bits from bits 2k of high byte l.
void unpack_q6_k(const uint8_t* src, float* dst, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b, src += 210) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = load_f16(src + 208);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, dst += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = int((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = int((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * float(sc[is]) * float(q1);
        dst[l + 32] = d * float(sc[is + 2]) * float(q2);
        dst[l + 64] = d * float(sc[is + 4]) * float(q3);
        dst[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
    }
  }
}

// ggml's types by id (ggml.h's enum ggml_type; ids 4, 5 and 31-33, 36-38 were removed there).
constexpr std::array kFormats = {
    BlockFormat{"F32", 0, 1, 4, unpack_f32, pack_f32},
    BlockFormat{"F16", 1, 1, 2, unpack_f16, pack_f16},
    BlockFormat{"Q4_0", 2, kQK, 18, unpack_q4_0, pack_q4_0},
    BlockFormat{"Q4_1", 3, kQK, 20, unpack_q4_1, pack_q4_1},
    BlockFormat{"Q5_0", 6, kQK, 22},
    BlockFormat{"Q5_1", 7, kQK, 24},
    BlockFormat{"Q8_0", 8, kQK, 34, unpack_q8_0, pack_q8_0},
    BlockFormat{"Q8_1", 9, kQK, 40},
    BlockFormat{"Q2_K", 10, kQKK, 84},
    BlockFormat{"Q3_K", 11, kQKK, 110},
    BlockFormat{"Q4_K", 12, kQKK, 144, unpack_q4_k},
    BlockFormat{"Q5_K", 13, kQKK, 176},
    BlockFormat{"Q6_K", 14, kQKK, 210, unpack_q6_k},
    BlockFormat{"Q8_K", 15, kQKK, 292},
    BlockFormat{"IQ2_XXS", 16, kQKK, 66},
    BlockFormat{"IQ2_XS", 17, kQKK, 74},
    BlockFormat{"IQ3_XXS", 18, kQKK, 98},
    BlockFormat{"IQ1_S", 19, kQKK, 50},
    BlockFormat{"IQ4_NL", 20, kQK, 18},
    BlockFormat{"IQ3_S", 21, kQKK, 110},
    BlockFormat{"IQ2_S", 22, kQKK, 82},
    BlockFormat{"IQ4_XS", 23, kQKK, 136},
    BlockFormat{"I8", 24, 1, 1},
    BlockFormat{"I16", 25, 1, 2},
    BlockFormat{"I32", 26, 1, 4},
    BlockFormat{"I64", 27, 1, 8},
    BlockFormat{"F64", 28, 1, 8},
    BlockFormat{"IQ1_M", 29, kQKK, 56},
    BlockFormat{"BF16", 30, 1, 2, unpack_bf16, pack_bf16},
    BlockFormat{"TQ1_0", 34, kQKK, 54},
    BlockFormat{"TQ2_0", 35, kQKK, 66},
    BlockFormat{"MXFP4", 39, kQK, 17},
};

}  // namespace

std::span<const BlockFormat> block_formats() {
  return kFormats;
}

const BlockFormat* block_format_by_ggml_type(uint32_t type) {
  for (const BlockFormat& f : kFormats) {
    if (f.ggml_type == type) return &f;
  }
  return nullptr;
}

const BlockFormat* block_format_by_name(std::string_view name) {
  const auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::toupper(static_cast<unsigned char>(x)) ==
                    std::toupper(static_cast<unsigned char>(y));
           });
  };
  for (const BlockFormat& f : kFormats) {
    if (same(f.name, name)) return &f;
  }
  return nullptr;
}

std::string readable_block_format_list() {
  std::string s;
  for (const BlockFormat& f : kFormats) {
    if (f.unpack != nullptr) s += (s.empty() ? "" : ", ") + std::string(f.name);
  }
  return s;
}

}  // namespace h2oflex
