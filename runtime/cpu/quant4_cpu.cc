// 4-bit group-wise quantization on the CPU (format and arithmetic: runtime/core/quant4.h).
// Built with -ffp-contract=off (runtime/cpu/CMakeLists.txt): lo + code * step must stay a
// multiply and an add, as in the CUDA twin.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/core/half.h"
#include "runtime/core/quant4.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/parallel_threshold.h"
#include "runtime/cpu/quant4_rows.h"

namespace h2oflex::cpu {

namespace {

// fp16 neighbours of a finite or infinite fp16 value, toward -inf / +inf.
uint16_t f16_next_down(uint16_t h) {
  if (h == 0x0000) return 0x8001;            // +0 -> the negative smallest subnormal
  return (h & 0x8000) != 0 ? h + 1 : h - 1;  // larger magnitude if negative
}
uint16_t f16_next_up(uint16_t h) {
  if (h == 0x8000) return 0x0001;  // -0 -> the smallest subnormal
  return (h & 0x8000) != 0 ? h - 1 : h + 1;
}

uint16_t f16_round_down(float x) {
  const uint16_t h = f32_to_f16(x);
  return f16_to_f32(h) > x ? f16_next_down(h) : h;
}
uint16_t f16_round_up(float x) {
  uint16_t h = f32_to_f16(x);
  if (f16_to_f32(h) < x) h = f16_next_up(h);
  return h == 0x7c00 ? 0x7bff : h;  // a step stays finite (see quant4.h)
}

void quantize_row(const float* x, int64_t n, uint8_t* out) {
  uint8_t* codes = out;
  uint16_t* meta = reinterpret_cast<uint16_t*>(out + quant4::code_bytes(n));
  std::memset(codes, 0, static_cast<size_t>(quant4::code_bytes(n)));
  for (int64_t g = 0; g < quant4::groups(n); ++g) {
    const int64_t begin = g * quant4::kGroup, end = std::min(n, begin + quant4::kGroup);
    float mn = x[begin], mx = x[begin];
    for (int64_t i = begin + 1; i < end; ++i) {
      mn = std::min(mn, x[i]);
      mx = std::max(mx, x[i]);
    }
    uint16_t lo_h = f16_round_down(mn);
    if (lo_h == 0x8000) lo_h = 0;  // -0 and +0: one encoding, whichever zero min() kept
    const float lo = f16_to_f32(lo_h);
    const uint16_t step_h = mx > lo ? f16_round_up((mx - lo) / quant4::kLevels) : 0;
    const float step = f16_to_f32(step_h);
    uint16_t pair[2] = {lo_h, step_h};
    std::memcpy(meta + 2 * g, pair, 4);  // the row's bytes need not be 2-aligned
    if (step == 0) continue;             // all codes 0: the value is lo
    for (int64_t i = begin; i < end; ++i) {
      const float q = std::nearbyint((x[i] - lo) / step);
      const uint8_t code = static_cast<uint8_t>(std::clamp(q, 0.0f, float(quant4::kLevels)));
      codes[i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? code : code << 4);
    }
  }
}

// One group's values: the low nibbles and the high nibbles each in a loop the compiler
// vectorizes (byte -> int -> float, one multiply, one add), then interleaved — about 4x a table
// lookup per code on one core.
template <typename Out, typename Convert>
void dequantize_group(const uint8_t* codes, int64_t count, float lo, float step, Out* out,
                      Convert convert) {
  constexpr int64_t kHalf = quant4::kGroup / 2;
  float even[kHalf], odd[kHalf];
  const int64_t bytes = (count + 1) / 2;
  for (int64_t j = 0; j < bytes; ++j) {
    even[j] = lo + static_cast<float>(codes[j] & 15) * step;
    odd[j] = lo + static_cast<float>(codes[j] >> 4) * step;
  }
  for (int64_t j = 0; j < count / 2; ++j) {
    out[2 * j] = convert(even[j]);
    out[2 * j + 1] = convert(odd[j]);
  }
  if (count % 2 != 0) out[count - 1] = convert(even[count / 2]);
}

// fp16 -> f32 inline for normal numbers and zero (a group's lo and step nearly always are), the
// general conversion for the rest.
inline float f16_value(uint16_t h) {
  const uint32_t exp = (h >> 10) & 0x1fu;
  if (exp == 0 || exp == 0x1f) return (h & 0x7fffu) == 0 ? (h != 0 ? -0.0f : 0.0f) : f16_to_f32(h);
  const uint32_t bits = (static_cast<uint32_t>(h & 0x8000u) << 16) | ((exp + 112) << 23) |
                        (static_cast<uint32_t>(h & 0x3ffu) << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename Out, typename Convert>
void dequantize_row(const uint8_t* in, int64_t n, Out* out, Convert convert) {
  const uint8_t* meta = in + quant4::code_bytes(n);
  for (int64_t g = 0; g < quant4::groups(n); ++g) {
    uint16_t pair[2];
    std::memcpy(pair, meta + 4 * g, 4);
    const int64_t begin = g * quant4::kGroup;
    dequantize_group(in + begin / 2, std::min(quant4::kGroup, n - begin), f16_value(pair[0]),
                     f16_value(pair[1]), out + begin, convert);
  }
}

}  // namespace

void quantize4_row(const float* x, int64_t n, uint8_t* out) {
  quantize_row(x, n, out);
}

void dequantize4_rows_f32(const uint8_t* in, int64_t rows, int64_t n, float* out) {
  const int64_t rb = quant4::row_bytes(n);
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(in + r * rb, n, out + r * n, [](float v) { return v; });
  }
}

void quantize4(const Tensor& src, Tensor& dst) {
  const int64_t n = src.dim(src.rank() - 1), rows = n == 0 ? 0 : src.numel() / n;
  const int64_t rb = quant4::row_bytes(n);
  const float* x = src.data<const float>();
  uint8_t* out = dst.data<uint8_t>();
#pragma omp parallel for schedule(static) if (rows * n > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) quantize_row(x + r * n, n, out + r * rb);
}

void dequantize4(const Tensor& src, Tensor& dst) {
  const int64_t n = dst.dim(dst.rank() - 1), rows = n == 0 ? 0 : dst.numel() / n;
  const int64_t rb = quant4::row_bytes(n);
  const uint8_t* in = src.data<const uint8_t>();
  const DType t = dst.dtype();
#pragma omp parallel for schedule(static) if (rows * n > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = in + r * rb;
    if (t == DType::F32) {
      dequantize_row(row, n, dst.data<float>() + r * n, [](float v) { return v; });
    } else if (t == DType::BF16) {
      dequantize_row(row, n, dst.data<uint16_t>() + r * n, f32_to_bf16);
    } else {
      dequantize_row(row, n, dst.data<uint16_t>() + r * n, f32_to_f16);
    }
  }
}

}  // namespace h2oflex::cpu
