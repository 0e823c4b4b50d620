// The device side of 4-bit group-wise quantization (runtime/core/quant4.h): one group of a row,
// shared by the quantize4 kernel and the KV slot stores, the twin of runtime/cpu/quant4_cpu.cc.
// Explicit _rn intrinsics keep every operation a single IEEE-rounded one, as on the CPU.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "runtime/core/quant4.h"

namespace h2oflex::cuda {

// Group g of the row of n values at x, into the compressed row at `row`: the group's 64 values
// own 32 whole code bytes and its (lo, step) pair, so groups are written independently.
__device__ inline void quantize4_group(const float* x, int64_t n, int64_t g, uint8_t* row) {
  uint8_t* codes = row;
  uint8_t* meta = row + quant4::code_bytes(n) + 4 * g;
  const int64_t begin = g * quant4::kGroup;
  const int64_t end = begin + quant4::kGroup < n ? begin + quant4::kGroup : n;
  float mn = x[begin], mx = x[begin];
  for (int64_t i = begin + 1; i < end; ++i) {
    mn = fminf(mn, x[i]);
    mx = fmaxf(mx, x[i]);
  }
  unsigned short lo_h = __half_as_ushort(__float2half_rd(mn));
  if (lo_h == 0x8000) lo_h = 0;  // -0 and +0: one encoding
  const float lo = __half2float(__ushort_as_half(lo_h));
  unsigned short step_h = 0;
  if (mx > lo) {
    step_h = __half_as_ushort(
        __float2half_ru(__fdiv_rn(__fsub_rn(mx, lo), static_cast<float>(quant4::kLevels))));
    if (step_h == 0x7c00) step_h = 0x7bff;  // a step stays finite
  }
  const float step = __half2float(__ushort_as_half(step_h));
  meta[0] = static_cast<uint8_t>(lo_h & 0xff);
  meta[1] = static_cast<uint8_t>(lo_h >> 8);
  meta[2] = static_cast<uint8_t>(step_h & 0xff);
  meta[3] = static_cast<uint8_t>(step_h >> 8);
  for (int64_t i = begin; i < end; i += 2) {
    uint8_t byte = 0;
    for (int64_t k = i; k < i + 2 && k < end; ++k) {
      uint8_t code = 0;
      if (step != 0.0f) {
        const float q = rintf(__fdiv_rn(__fsub_rn(x[k], lo), step));
        code = static_cast<uint8_t>(fminf(fmaxf(q, 0.0f), static_cast<float>(quant4::kLevels)));
      }
      byte |= static_cast<uint8_t>(k % 2 == 0 ? code : code << 4);
    }
    codes[i / 2] = byte;
  }
}

}  // namespace h2oflex::cuda
