// linear() over a compressed weight on the CPU (runtime/cpu/linear_compressed_cpu.cc).
#pragma once

#include "runtime/core/op_types.h"

namespace h2oflex::cpu {

// The plain GEMM behind linear() (runtime/cpu/gemm_cpu.cc), on a weight of n rows of type wt
// (the compute type's operand, or f32) that may be a piece of a larger matrix: out[m, :n] with
// row stride ldo = x · wᵀ (+ bias[:n]) (then ReLU).
void linear_into(const Tensor& x, const void* w, DType wt, int64_t n, const float* bias, float* out,
                 int64_t ldo, ops::ComputeType ct, bool relu);

// out[m, n] = x[m, k] · unpacked(w)ᵀ (+ bias) (then ReLU); w packed (Tensor::packed()), u8
// [n, its row bytes of k values].
void linear_compressed(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out,
                       ops::ComputeType ct, bool relu);

}  // namespace h2oflex::cpu
