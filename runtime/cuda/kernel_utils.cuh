// Helpers shared by the .cu kernels: element conversions, deterministic warp/block reductions,
// dtype dispatch, and small per-sequence integer arrays passed by value as kernel parameters.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/error.h"
#include "runtime/cuda/cuda_check.h"

namespace h2oflex::cuda {

constexpr int kWarpSize = 32;

__device__ __forceinline__ float to_f32(float v) {
  return v;
}
__device__ __forceinline__ float to_f32(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Calls f(T{}) with T the element type of a floating dtype (f32, f16, bf16).
template <typename F>
void dispatch_float(DType dtype, const char* what, F&& f) {
  switch (dtype) {
    case DType::F32:
      f(float{});
      return;
    case DType::F16:
      f(__half{});
      return;
    case DType::BF16:
      f(__nv_bfloat16{});
      return;
    case DType::I32:
    case DType::U8:
      break;
  }
  throw InternalError(::h2oflex::detail::concat(what, ": unsupported dtype ", dtype_name(dtype),
                                                " (expected f32, f16 or bf16)"));
}

// Butterfly reductions: every lane ends with the same value, in a fixed order (deterministic).
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Block-wide reductions for blockDim.x a multiple of 32 (at most 1024). `scratch` is a
// __shared__ float[32]; every thread receives the result. All threads must call.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < num_warps ? scratch[lane] : 0.0f;
    w = warp_sum(w);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  return scratch[0];
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int num_warps = blockDim.x / kWarpSize;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < num_warps ? scratch[lane] : -INFINITY;
    w = warp_max(w);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  return scratch[0];
}

// Dot product of two length-n vectors by one warp: lane l takes elements l, l+32, ...; the
// partial sums are combined by warp_sum. Every lane returns the same value.
template <typename A, typename B>
__device__ __forceinline__ float warp_dot(const A* a, const B* b, int n) {
  float acc = 0.0f;
  for (int i = threadIdx.x % kWarpSize; i < n; i += kWarpSize) {
    acc = fmaf(to_f32(a[i]), to_f32(b[i]), acc);
  }
  return warp_sum(acc);
}

// Per-sequence integers (padding lengths, protected positions) travel as a kernel parameter so
// that no host-to-device copy (and no stream synchronization) is needed. Batches larger than
// kChunk are processed in several launches.
struct SeqInts {
  static constexpr int kChunk = 512;
  int32_t v[kChunk];
};

// Splits `values` into chunks and calls launch(first_seq, count, chunk) for each.
template <typename F>
void for_each_seq_chunk(const std::vector<int32_t>& values, int64_t batch, F&& launch) {
  H2OFLEX_CHECK(static_cast<int64_t>(values.size()) == batch, "expected ", batch,
                " per-sequence values, got ", values.size());
  for (int64_t first = 0; first < batch; first += SeqInts::kChunk) {
    const int count = static_cast<int>(std::min<int64_t>(SeqInts::kChunk, batch - first));
    SeqInts chunk{};
    for (int i = 0; i < count; ++i) chunk.v[i] = values[first + i];
    launch(first, count, chunk);
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Grid size for grid-stride loops over n elements.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = ceil_div(n, threads);
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65535 * 8)));
}

// Allows `kernel` to use `bytes` of dynamic shared memory (above the 48 KiB default), or throws
// naming the op when the device cannot provide that much.
template <typename Kernel>
void allow_dynamic_smem(Kernel kernel, size_t bytes, const char* op) {
  if (bytes <= 48 * 1024) return;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int max_optin = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (bytes > static_cast<size_t>(max_optin)) {
    throw InternalError(::h2oflex::detail::concat(op, ": needs ", bytes,
                                                  " bytes of shared memory per block, the device "
                                                  "allows ",
                                                  max_optin));
  }
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
}

}  // namespace h2oflex::cuda
