// Seeded random blocks of a GGUF block format (runtime/core/block_format.h) for the tests of the
// block decoders: random code and sub-scale bytes, with the f16 fields (scales, minima) either
// any finite f16 or in a sane range for products.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/core/block_format.h"
#include "runtime/core/half.h"
#include "runtime/core/rng.h"
#include "runtime/core/storage_format.h"

namespace h2oflex {

// The offsets of a block's f16 fields in GGUF block format f (q8_0 and q4_0: d; q4_1: d, m;
// q4_k: d, dmin; q6_k: d after the codes and scales).
inline std::vector<size_t> block_f16_offsets(PackedFormat f) {
  switch (f) {
    case PackedFormat::Q8_0:
    case PackedFormat::Q4_0:
      return {0};
    case PackedFormat::Q4_1:
    case PackedFormat::Q4_K:
      return {0, 2};
    case PackedFormat::Q6_K:
      return {208};
    default:
      return {};
  }
}

// `blocks` blocks of f. scale <= 0: each f16 field any finite f16 (subnormal, zero and negative
// ones included); scale > 0: each in [scale / 2, scale], so that products stay moderate.
inline std::vector<uint8_t> random_blocks(PackedFormat f, size_t blocks, uint64_t seed,
                                          float scale = 0) {
  const BlockFormat* row = block_format_by_name(packed_format_row(f).ggml_name);
  std::vector<uint8_t> bytes(blocks * row->block_bytes);
  for (size_t i = 0; i < bytes.size(); i += 16) {
    const std::array<uint32_t, 4> r = philox4x32(seed, 0, i);
    std::memcpy(&bytes[i], r.data(), std::min<size_t>(16, bytes.size() - i));
  }
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t at : block_f16_offsets(f)) {
      uint8_t* p = &bytes[b * row->block_bytes + at];
      if (scale > 0) {
        const uint16_t h = f32_to_f16(scale * (0.5f + static_cast<float>(p[0]) / 510.0f));
        std::memcpy(p, &h, 2);
      } else if (((p[1] >> 2) & 0x1f) == 0x1f) {
        p[1] &= 0xbf;  // an inf / NaN exponent made finite
      }
    }
  }
  return bytes;
}

}  // namespace h2oflex
