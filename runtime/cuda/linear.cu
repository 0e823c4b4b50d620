// linear: out[m, n] = x[m, k] · w[n, k]ᵀ (+ bias) (ReLU) with cuBLAS, fp32 accumulation.
//
// The compute type picks the GEMM operand type: F32 multiplies in fp32 (16-bit weights are
// widened into a workspace); BF16/F16 narrow x (and w if stored differently) to that type and
// run the tensor-core path with fp32 accumulation and an fp32 result.
#include <climits>

#include "runtime/cuda/cublas_handle.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/launchers.h"
#include "runtime/cuda/scratch.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

DType operand_dtype(ComputeType ct) {
  switch (ct) {
    case ComputeType::F32:
      return DType::F32;
    case ComputeType::BF16:
      return DType::BF16;
    case ComputeType::F16:
      return DType::F16;
  }
  throw InternalError("linear: unknown compute type");
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return CUDA_R_32F;
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::I32:
      break;
  }
  throw InternalError("linear: no GEMM operand type for i32");
}

}  // namespace

void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out, ComputeType ct,
            bool relu) {
  const int64_t n = w.dim(0);
  const int64_t k = w.dim(1);
  const int64_t m = k == 0 ? out.numel() / std::max<int64_t>(n, 1) : x.numel() / k;
  if (m == 0 || n == 0) return;
  H2OFLEX_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "linear: [", m, ", ", k, "] x [", n,
                ", ", k, "] exceeds cuBLAS's int dimensions");
  cudaStream_t stream = current_stream();

  if (k == 0) {  // empty reduction: the product is zero
    CUDA_CHECK(cudaMemsetAsync(out.raw(), 0, static_cast<size_t>(m * n) * sizeof(float), stream));
  } else {
    const DType op_dtype = operand_dtype(ct);
    const size_t op_size = dtype_size(op_dtype);

    const void* w_op = w.raw();
    DeviceScratch w_scratch;
    if (w.dtype() != op_dtype) {
      w_scratch = DeviceScratch(static_cast<size_t>(n * k) * op_size, stream);
      launch_convert(w.raw(), w.dtype(), w_scratch.get(), op_dtype, n * k, stream);
      w_op = w_scratch.get();
    }
    const void* x_op = x.raw();
    DeviceScratch x_scratch;
    if (op_dtype != DType::F32) {
      x_scratch = DeviceScratch(static_cast<size_t>(m * k) * op_size, stream);
      launch_convert(x.raw(), DType::F32, x_scratch.get(), op_dtype, m * k, stream);
      x_op = x_scratch.get();
    }

    // cuBLAS is column-major. Row-major out[m, n] is column-major outᵀ (n × m, ld n), and
    // outᵀ = w · xᵀ where row-major w[n, k] read column-major is wᵀ (k × n, ld k) — hence
    // op(A) = Aᵀ with A = w, and row-major x[m, k] read column-major is xᵀ (k × m, ld k).
    const float alpha = 1.0f, beta = 0.0f;
    const cudaDataType_t t = cuda_type(op_dtype);
    CUBLAS_CHECK(cublasGemmEx(cublas_handle(stream), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                              static_cast<int>(m), static_cast<int>(k), &alpha, w_op, t,
                              static_cast<int>(k), x_op, t, static_cast<int>(k), &beta, out.raw(),
                              CUDA_R_32F, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    // The scratch buffers are freed in stream order after the GEMM, on scope exit.
  }
  launch_bias_relu(out.data<float>(), bias, m, n, relu, stream);
}

}  // namespace h2oflex::cuda
