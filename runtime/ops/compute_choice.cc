#include "runtime/ops/compute_choice.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/error.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/ops/ops.h"

namespace h2oflex::ops {

namespace {

// Values for timing only: cheap to make (the choice runs at the start of every `auto` run, also
// under sanitizers) and normal floats, so no kernel meets denormals.
Tensor timing_matrix(int64_t rows, int64_t cols, float scale) {
  Tensor t = Tensor::empty({rows, cols}, DType::F32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < rows * cols; ++i) p[i] = scale * static_cast<float>(i % 13 - 6);
  return t;
}

// Best of two timings of x[m, k] · w[n, k]^T in type ct (after one warm-up call).
double linear_seconds(ComputeType ct, int64_t m, int64_t k, int64_t n) {
  const Tensor x = timing_matrix(m, k, 0.1f);
  const Tensor w = to_dtype(timing_matrix(n, k, 0.01f), operand_dtype(ct));
  Tensor out = Tensor::empty({m, n}, DType::F32);
  linear(x, w, nullptr, out, ct);
  double best = 1e30;
  for (int i = 0; i < 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    linear(x, w, nullptr, out, ct);
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

std::optional<ComputeType> parse_compute_dtype(std::string_view name, std::string_view key) {
  if (name == "auto") return std::nullopt;
  if (name == "f32" || name == "fp32" || name == "float32") return ComputeType::F32;
  if (name == "f16" || name == "fp16" || name == "float16") return ComputeType::F16;
  if (name == "bf16" || name == "bfloat16") return ComputeType::BF16;
  throw InputError(detail::concat(key, ": expected auto, f32, f16 or bf16 (or fp32, float32, ",
                                  "fp16, float16, bfloat16), got '", name, "'"));
}

std::string_view compute_type_name(ComputeType ct) {
  return dtype_name(operand_dtype(ct));
}

const std::vector<ComputeRate>& measured_cpu_compute_rates() {
  // Shapes of a 1-2B model's layers, small enough to measure quickly: prefill is GEMM-bound
  // (256 rows), decode streams the weights (8 rows of a 16 MiB f32 matrix).
  static const std::vector<ComputeRate> rates = [] {
    std::vector<ComputeRate> r;
    for (ComputeType ct : {ComputeType::F32, ComputeType::BF16, ComputeType::F16}) {
      // A type without a kernel of its own is an f32 GEMM plus conversions: never faster.
      if (!cpu::gemm_has_kernel(ct)) continue;
      r.push_back({ct, linear_seconds(ct, 256, 1024, 1024), linear_seconds(ct, 8, 1024, 4096)});
    }
    return r;
  }();
  return rates;
}

ComputeType fastest_cpu_compute_type() {
  const std::vector<ComputeRate>& rates = measured_cpu_compute_rates();
  const auto total = [](const ComputeRate& r) { return r.prefill_s + r.decode_s; };
  const ComputeRate* best = &rates.front();  // f32
  for (const ComputeRate& r : rates) {
    if (total(r) * kNarrowMargin <= total(rates.front()) && total(r) < total(*best)) best = &r;
  }
  return best->type;
}

}  // namespace h2oflex::ops
