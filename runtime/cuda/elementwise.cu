// Row-wise and elementwise kernels: LayerNorm, RMSNorm, bias + ReLU, residual add, SwiGLU, GELU,
// the fused-QKV split, token and position embeddings, dtype conversion.
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/launchers.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row. Mean and variance are two passes in fp32 over the row (no E[x²]-E[x]²
// cancellation). `out` may alias `x`: each element is read and then written by the same thread,
// after both reductions have consumed the whole row.
template <typename W>
__global__ void layer_norm_kernel(const float* x, const W* gamma, const W* beta, float eps,
                                  float* out, int64_t dim) {
  __shared__ float scratch[kWarpSize];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * dim;
  float* yr = out + static_cast<int64_t>(blockIdx.x) * dim;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += xr[i];
  const float mean = block_sum(sum, scratch) / static_cast<float>(dim);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float d = xr[i] - mean;
    sq = fmaf(d, d, sq);
  }
  const float var = block_sum(sq, scratch) / static_cast<float>(dim);
  const float inv_std = 1.0f / sqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    yr[i] = (xr[i] - mean) * inv_std * to_f32(gamma[i]) + to_f32(beta[i]);
  }
}

// One block per row; fp32 sum of squares. `out` may alias `x`: each element is read and then
// written by the same thread, after the reduction has consumed the whole row.
__global__ void rms_norm_kernel(const float* x, const float* gamma, float eps, float* out,
                                int64_t dim) {
  __shared__ float scratch[kWarpSize];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * dim;
  float* yr = out + static_cast<int64_t>(blockIdx.x) * dim;
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sq = fmaf(xr[i], xr[i], sq);
  const float mean_sq = block_sum(sq, scratch) / static_cast<float>(dim);
  // 1/sqrtf (IEEE) rather than rsqrtf (approximate), as the CPU backend computes it.
  const float inv = 1.0f / sqrtf(mean_sq + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = xr[i] * inv * gamma[i];
}

__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

__global__ void gelu_kernel(float* x, int64_t n) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = x[i];
    x[i] = v * 0.5f * (1.0f + erff(v * kInvSqrt2));
  }
}

// Grid-stride over the rows * heads * d elements of each output; qkv row r holds, per head,
// [q(d), k(d), v(d)].
__global__ void split_qkv_kernel(const float* qkv, int64_t rows, int64_t heads, int64_t d, float* q,
                                 float* k, float* v) {
  const int64_t n = rows * heads * d;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t head_at = i / d, t = i % d;  // head_at = r * heads + hi
    const float* src = qkv + head_at * 3 * d + t;
    q[i] = src[0];
    k[i] = src[d];
    v[i] = src[2 * d];
  }
}

template <typename B>
__global__ void bias_relu_kernel(float* x, const B* bias, int64_t rows, int64_t cols, bool relu) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = x[i];
    if (bias != nullptr) v += to_f32(bias[i % cols]);
    if (relu) v = v > 0.0f ? v : 0.0f;
    x[i] = v;
  }
}

template <typename Y>
__global__ void add_kernel(float* x, const Y* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] += to_f32(y[i]);
  }
}

// One block per row. Ids outside the table yield a zero row: ids on the device come from
// argmax/sample (always in range); host ids are range-checked by the dispatcher.
template <typename T>
__global__ void embed_kernel(const int32_t* ids, const T* table, int64_t vocab, int64_t dim,
                             float* out) {
  const int64_t r = blockIdx.x;
  const int32_t id = ids[r];
  float* o = out + r * dim;
  if (id < 0 || id >= vocab) {
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = 0.0f;
    return;
  }
  const T* src = table + static_cast<int64_t>(id) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = to_f32(src[i]);
}

// One block per row; a position outside the table adds nothing (see embed_kernel).
template <typename T>
__global__ void add_positions_kernel(float* x, const int32_t* positions, const T* table,
                                     int64_t table_rows, int64_t dim, int offset) {
  const int64_t r = blockIdx.x;
  const int64_t p = static_cast<int64_t>(positions[r]) + offset;
  if (p < 0 || p >= table_rows) return;
  const T* src = table + p * dim;
  float* o = x + r * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] += to_f32(src[i]);
}

template <typename S, typename D>
__global__ void convert_kernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = from_f32<D>(to_f32(src[i]));
  }
}

int64_t rows_of(const Tensor& t, int64_t cols) {
  return cols == 0 ? 0 : t.numel() / cols;
}

void check_grid_rows(int64_t rows, const char* op) {
  H2OFLEX_CHECK(rows <= 0x7fffffff, op, ": ", rows, " rows exceed one launch");
}

}  // namespace

void launch_bias_relu(float* x, const Tensor* bias, int64_t rows, int64_t cols, bool relu,
                      cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0 || (bias == nullptr && !relu)) return;
  const unsigned grid = grid_for(n, kThreads);
  if (bias == nullptr) {
    bias_relu_kernel<float><<<grid, kThreads, 0, stream>>>(x, nullptr, rows, cols, relu);
    CUDA_CHECK_LAUNCH("bias_relu_kernel");
    return;
  }
  dispatch_float(bias->dtype(), "bias", [&](auto tag) {
    using B = decltype(tag);
    bias_relu_kernel<B><<<grid, kThreads, 0, stream>>>(x, bias->data<const B>(), rows, cols, relu);
    CUDA_CHECK_LAUNCH("bias_relu_kernel");
  });
}

void launch_convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
                    cudaStream_t stream) {
  if (n == 0) return;
  if (src_dtype == dst_dtype) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * dtype_size(src_dtype),
                               cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const unsigned grid = grid_for(n, kThreads);
  dispatch_float(src_dtype, "convert source", [&](auto src_tag) {
    using S = decltype(src_tag);
    dispatch_float(dst_dtype, "convert destination", [&](auto dst_tag) {
      using D = decltype(dst_tag);
      convert_kernel<S, D>
          <<<grid, kThreads, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst), n);
      CUDA_CHECK_LAUNCH("convert_kernel");
    });
  });
}

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& out) {
  const int64_t dim = x.dim(-1);
  const int64_t rows = rows_of(x, dim);
  if (rows == 0) return;
  check_grid_rows(rows, "layer_norm");
  H2OFLEX_CHECK(gamma.dtype() == beta.dtype(), "layer_norm: gamma is ", dtype_name(gamma.dtype()),
                " but beta is ", dtype_name(beta.dtype()));
  cudaStream_t stream = current_stream();
  dispatch_float(gamma.dtype(), "layer_norm gamma", [&](auto tag) {
    using W = decltype(tag);
    layer_norm_kernel<W><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        x.data<const float>(), gamma.data<const W>(), beta.data<const W>(), eps, out.data<float>(),
        dim);
    CUDA_CHECK_LAUNCH("layer_norm_kernel");
  });
}

void rms_norm(const Tensor& x, const Tensor& gamma, float eps, Tensor& out) {
  const int64_t dim = x.dim(-1);
  const int64_t rows = rows_of(x, dim);
  if (rows == 0) return;
  check_grid_rows(rows, "rms_norm");
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, current_stream()>>>(
      x.data<const float>(), gamma.data<const float>(), eps, out.data<float>(), dim);
  CUDA_CHECK_LAUNCH("rms_norm_kernel");
}

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const int64_t n = gate.numel();
  if (n == 0) return;
  silu_mul_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      gate.data<const float>(), up.data<const float>(), out.data<float>(), n);
  CUDA_CHECK_LAUNCH("silu_mul_kernel");
}

void gelu(Tensor& x) {
  const int64_t n = x.numel();
  if (n == 0) return;
  gelu_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(x.data<float>(), n);
  CUDA_CHECK_LAUNCH("gelu_kernel");
}

void split_qkv_heads(const Tensor& qkv, int64_t heads, Tensor& q, Tensor& k, Tensor& v) {
  const int64_t rows = qkv.dim(0), d = qkv.dim(1) / (3 * heads);
  const int64_t n = rows * heads * d;
  if (n == 0) return;
  split_qkv_kernel<<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      qkv.data<const float>(), rows, heads, d, q.data<float>(), k.data<float>(), v.data<float>());
  CUDA_CHECK_LAUNCH("split_qkv_kernel");
}

void add_bias_relu(Tensor& x, const Tensor& bias, bool relu) {
  const int64_t cols = x.dim(-1);
  launch_bias_relu(x.data<float>(), &bias, rows_of(x, cols), cols, relu, current_stream());
}

void add_inplace(Tensor& x, const Tensor& y) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t stream = current_stream();
  dispatch_float(y.dtype(), "add_inplace y", [&](auto tag) {
    using Y = decltype(tag);
    add_kernel<Y>
        <<<grid_for(n, kThreads), kThreads, 0, stream>>>(x.data<float>(), y.data<const Y>(), n);
    CUDA_CHECK_LAUNCH("add_kernel");
  });
}

void embed_tokens(const Tensor& ids, const Tensor& table, Tensor& out) {
  const int64_t rows = ids.numel();
  if (rows == 0) return;
  check_grid_rows(rows, "embed_tokens");
  const int64_t vocab = table.dim(0), dim = table.dim(1);
  cudaStream_t stream = current_stream();
  dispatch_float(table.dtype(), "embed_tokens table", [&](auto tag) {
    using T = decltype(tag);
    embed_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        ids.data<const int32_t>(), table.data<const T>(), vocab, dim, out.data<float>());
    CUDA_CHECK_LAUNCH("embed_kernel");
  });
}

void add_positions(Tensor& x, const Tensor& positions, const Tensor& table, int offset) {
  const int64_t rows = positions.numel();
  if (rows == 0) return;
  check_grid_rows(rows, "add_positions");
  const int64_t table_rows = table.dim(0), dim = table.dim(1);
  cudaStream_t stream = current_stream();
  dispatch_float(table.dtype(), "add_positions table", [&](auto tag) {
    using T = decltype(tag);
    add_positions_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        x.data<float>(), positions.data<const int32_t>(), table.data<const T>(), table_rows, dim,
        offset);
    CUDA_CHECK_LAUNCH("add_positions_kernel");
  });
}

}  // namespace h2oflex::cuda
