// Types shared by the op interface (runtime/ops) and its backends (runtime/cpu, runtime/cuda),
// kept on the ground floor so the backends need not include the interface above them.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/tensor.h"

namespace h2oflex::ops {

enum class ComputeType : uint8_t { F32, BF16, F16 };

// The type of a GEMM's operands in compute type ct: activations are rounded to it and weight
// matrices are stored in it.
inline DType operand_dtype(ComputeType ct) {
  switch (ct) {
    case ComputeType::BF16:
      return DType::BF16;
    case ComputeType::F16:
      return DType::F16;
    case ComputeType::F32:
      break;
  }
  return DType::F32;
}

// The compute type whose operands are `t` (f32, f16 or bf16).
inline ComputeType compute_type_of_operand(DType t) {
  return t == DType::BF16  ? ComputeType::BF16
         : t == DType::F16 ? ComputeType::F16
                           : ComputeType::F32;
}

// One product of ops::linear_same_input: *out = x · w ᵀ (+ *bias) (then ReLU if relu).
struct LinearOut {
  const Tensor* w;
  const Tensor* bias;  // or null
  Tensor* out;
  bool relu = false;
};

// Sampling: temperature and nucleus (top-p) filtering from a counter-based stream.
struct SampleParams {
  float temperature = 1.0f;
  float top_p = 1.0f;
  uint64_t seed = 0;
};

}  // namespace h2oflex::ops
