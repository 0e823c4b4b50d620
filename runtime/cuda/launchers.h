// Kernel launchers shared between the backend's .cu files (internal to runtime/cuda).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/core/tensor.h"

namespace h2oflex::cuda {

// x[r, c] += bias[c] (bias may be null; f32/f16/bf16), then ReLU if `relu`; x is [rows, cols].
void launch_bias_relu(float* x, const Tensor* bias, int64_t rows, int64_t cols, bool relu,
                      cudaStream_t stream);

// dst[i] = src[i] converted between f32/f16/bf16 (round to nearest even).
// dst[rows, n] (f32, f16 or bf16) = the values of `rows` compressed rows (quant4.h) at src.
void launch_dequantize4(const void* src, int64_t rows, int64_t n, void* dst, DType dtype,
                        cudaStream_t stream);

void launch_convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
                    cudaStream_t stream);

}  // namespace h2oflex::cuda
