// Kernel launchers shared between the backend's .cu files (internal to runtime/cuda).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/core/storage_format.h"
#include "runtime/core/tensor.h"

namespace h2oflex::cuda {

// x[r, c] += bias[c] (bias may be null; f32/f16/bf16), then ReLU if `relu`; x is [rows, cols].
void launch_bias_relu(float* x, const Tensor* bias, int64_t rows, int64_t cols, bool relu,
                      cudaStream_t stream);

// dst[rows, n] (f32, f16 or bf16) = the values of `rows` compressed rows (quant4.h) at src.
void launch_dequantize4(const void* src, int64_t rows, int64_t n, void* dst, DType dtype,
                        cudaStream_t stream);

// dst[rows, n] (f32, f16 or bf16) = the values of `rows` rows packed in `f` at src (any packed
// format: q4_g64 or a GGUF block format; runtime/cuda/packed_rows.cu).
void launch_unpack_rows(PackedFormat f, const void* src, int64_t rows, int64_t n, void* dst,
                        DType dtype, cudaStream_t stream);

// `rows` rows of n values at src packed in GGUF block format `f` (q8_0, q4_0, q4_1) into dst;
// InternalError for a format that cannot be packed.
void launch_pack_rows(PackedFormat f, const float* src, int64_t rows, int64_t n, uint8_t* dst,
                      cudaStream_t stream);

// Inputs of up to this many rows multiply GGUF blocks in place (launch_linear_blocks_few_rows).
inline constexpr int64_t kBlockLinearMaxRows = 16;

// out[m, n] = x[m, k] · wᵀ in f32 with w n rows of k values in GGUF block format `f`, read from
// the blocks (no unpacked matrix written); m <= kBlockLinearMaxRows
// (runtime/cuda/linear_blocks.cu).
void launch_linear_blocks_few_rows(PackedFormat f, const float* x, int64_t m, int64_t k,
                                   const uint8_t* w, int64_t n, float* out, cudaStream_t stream);

// dst[i] = src[i] converted between f32/f16/bf16 (round to nearest even).
void launch_convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
                    cudaStream_t stream);

}  // namespace h2oflex::cuda
