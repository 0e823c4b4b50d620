// The row layout of FlexGen-style 4-bit group-wise compression (compressed_format in
// runtime/core/storage_format.h), shared by the CPU and CUDA kernels (runtime/ops/ops.h,
// quantize4 / dequantize4).
//
// A row of n values is stored as
//   codes:  ceil(n / 2) bytes, value 2j in the low nibble of byte j and value 2j + 1 in the high
//           one (an odd row's last high nibble is 0);
//   groups: ceil(n / 64) pairs (lo, step) of little-endian fp16, group g covering values
//           [64 g, min(64 g + 64, n)).
// Every row stands alone, so a KV cache's token row can be written, evicted or gathered without
// touching its neighbours, and a matrix can be split by rows.
//
// Quantization of a group with minimum mn and maximum mx:
//   lo   = mn rounded down to fp16, step = (mx - lo) / 15 rounded up to fp16 (0 when mx == lo),
//   code = clamp(nearest-even((x - lo) / step), 0, 15)   (0 when step == 0),
//   value = lo + code * step   (one f32 multiply, one f32 add: no fused multiply-add, so the
//                               CPU and CUDA kernels give the same bits).
// Rounding lo down and step up keeps [mn, mx] inside [lo, lo + 15 step], so every value is
// within step / 2 of its dequantized value (up to f32 rounding); a constant group of an
// fp16-representable value comes back exactly. Values are assumed finite and a group's range
// below 15 x 65504 (the largest fp16 step); weights and activations are far inside that.
#pragma once

#include <cstdint>

namespace h2oflex::quant4 {

inline constexpr int64_t kGroup = 64;
inline constexpr int kLevels = 15;  // codes 0 .. 15

constexpr int64_t code_bytes(int64_t n) {
  return (n + 1) / 2;
}
constexpr int64_t groups(int64_t n) {
  return (n + kGroup - 1) / kGroup;
}
// Bytes of one compressed row of n values (equal to compressed_format(...).bytes(n)).
constexpr int64_t row_bytes(int64_t n) {
  return code_bytes(n) + groups(n) * 4;
}

// Elements (u8 bytes when compressed) per row of n values in tensors that hold such rows.
constexpr int64_t stored_row(bool compressed, int64_t n) {
  return compressed ? row_bytes(n) : n;
}

}  // namespace h2oflex::quant4
