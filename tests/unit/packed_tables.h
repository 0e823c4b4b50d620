// Packed tables for the tests of ops on packed tensors (linear, embed_tokens).
#pragma once

#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/core/half.h"
#include "runtime/core/rng.h"
#include "runtime/core/storage_format.h"
#include "runtime/ops/ops.h"
#include "tests/support/random_rows.h"

namespace h2oflex::testing_support {

// n rows of k values packed in `f`. Formats that can be packed are packed from random values;
// the K formats (read from files only) are random block bytes with sane f16 scales.
inline Tensor random_packed(PackedFormat f, int64_t n, int64_t k, uint64_t seed) {
  const StorageFormat sf{DType::F32, f};
  Tensor packed = Tensor::empty(stored_shape(sf, {n, k}), DType::U8).as_packed(f);
  if (packed_format_row(f).packable) {
    ops::pack(random_rows(n, k, seed, 0.05f), packed);
    return packed;
  }
  uint8_t* p = packed.data<uint8_t>();
  for (int64_t i = 0; i < packed.numel(); i += 16) {
    const std::array<uint32_t, 4> r = philox4x32(seed, 0, static_cast<uint64_t>(i));
    std::memcpy(p + i, r.data(), static_cast<size_t>(std::min<int64_t>(16, packed.numel() - i)));
  }
  const auto set_f16 = [&](uint8_t* at, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(at, &h, 2);
  };
  const int64_t blocks = n * k / 256;
  for (int64_t b = 0; b < blocks; ++b) {
    if (f == PackedFormat::Q4_K) {  // d, dmin, 12 scale bytes, 128 nibble bytes
      set_f16(p + b * 144, 0.002f);
      set_f16(p + b * 144 + 2, 0.001f);
    } else {  // Q6_K: ql[128], qh[64], int8 scales[16], d
      set_f16(p + b * 210 + 208, 0.0004f);
    }
  }
  return packed;
}

}  // namespace h2oflex::testing_support
