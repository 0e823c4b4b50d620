// linear() over a compressed weight on the CPU (runtime/cpu/linear_compressed_cpu.cc).
#pragma once

#include "runtime/core/op_types.h"

namespace h2oflex::cpu {

// out[m, n] = x[m, k] · dequantized(w)ᵀ (+ bias) (then ReLU); w u8 [n, quant4::row_bytes(k)].
void linear_compressed(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out,
                       ops::ComputeType ct, bool relu);

}  // namespace h2oflex::cpu
