// linear: out[m, n] = x[m, k] · w[n, k]ᵀ (+ bias) (ReLU) with cuBLAS, fp32 accumulation.
//
// The compute type picks the GEMM operand type: F32 multiplies in fp32 (16-bit weights are
// widened into a workspace); BF16/F16 narrow x (and w if stored differently) to that type and
// run the tensor-core path with fp32 accumulation and an fp32 result. A converted operand is
// converted and multiplied in row pieces of bounded size (gpu_memory_reserve.h), so the bf16
// copy of a prefill's [16384, 28672] input is not one 940 MB temporary.
//
// A packed weight (u8 rows of a packed format, runtime/core/storage_format.h) is unpacked piece
// by piece to the operand type like the other weight conversions; a decode step's few rows on
// GGUF blocks are multiplied from the blocks instead (runtime/cuda/linear_blocks.cu).
#include <climits>

#include "runtime/core/gpu_memory_reserve.h"
#include "runtime/cuda/cublas_handle.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/launchers.h"
#include "runtime/cuda/scratch.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return CUDA_R_32F;
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::I32:
    case DType::U8:
      break;
  }
  throw InternalError("linear: no GEMM operand type for i32");
}

// outᵀ[n0 .. n0 + nc) x [m0 .. m0 + mc) = w[n0 .., :] · x[m0 .., :]ᵀ in fp32 accumulation.
// cuBLAS is column-major. Row-major out[m, n] is column-major outᵀ (n × m, ld n), and
// outᵀ = w · xᵀ where row-major w[n, k] read column-major is wᵀ (k × n, ld k) — hence op(A) = Aᵀ
// with A = w, and row-major x[m, k] read column-major is xᵀ (k × m, ld k).
void gemm_block(const void* w_op, const void* x_op, cudaDataType_t t, int64_t nc, int64_t mc,
                int64_t k, float* out_block, int64_t ld_out, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(cublas_handle(stream), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nc),
                            static_cast<int>(mc), static_cast<int>(k), &alpha, w_op, t,
                            static_cast<int>(k), x_op, t, static_cast<int>(k), &beta, out_block,
                            CUDA_R_32F, static_cast<int>(ld_out), CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  CUDA_CHECK_LAUNCH("cublasGemmEx (linear)");
}

}  // namespace

namespace detail {

void linear_in_pieces(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out,
                      ComputeType ct, bool relu, uint64_t piece_bytes) {
  // A packed weight holds rows of x's row length in its format's bytes.
  const PackedFormat format = w.packed();
  const bool packed = format != PackedFormat::None;
  const int64_t n = w.dim(0);
  const int64_t k = packed ? x.dim(x.rank() - 1) : w.dim(1);
  const int64_t w_row_bytes = packed ? static_cast<int64_t>(packed_format_row(format).row_bytes(k))
                                     : k * static_cast<int64_t>(dtype_size(w.dtype()));
  const int64_t m = k == 0 ? out.numel() / std::max<int64_t>(n, 1) : x.numel() / k;
  if (m == 0 || n == 0) return;
  H2OFLEX_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "linear: [", m, ", ", k, "] x [", n,
                ", ", k, "] exceeds cuBLAS's int dimensions");
  cudaStream_t stream = current_stream();

  if (k == 0) {  // empty reduction: the product is zero
    CUDA_CHECK(cudaMemsetAsync(out.raw(), 0, static_cast<size_t>(m * n) * sizeof(float), stream));
  } else if (packed && format != PackedFormat::Q4G64 && m <= kBlockLinearMaxRows) {
    launch_linear_blocks_few_rows(format, x.data<const float>(), m, k, w.data<const uint8_t>(), n,
                                  out.data<float>(), stream);
  } else {
    const DType op_dtype = ops::operand_dtype(ct);
    const size_t op_size = dtype_size(op_dtype);
    const cudaDataType_t t = cuda_type(op_dtype);
    const bool convert_w = w.dtype() != op_dtype, convert_x = op_dtype != DType::F32;
    // Rows of a converted operand per piece: the copy never exceeds piece_bytes (one row at
    // least); an operand used as it is goes whole.
    const int64_t row_bytes = k * static_cast<int64_t>(op_size);
    const int64_t piece_rows =
        std::max<int64_t>(1, static_cast<int64_t>(piece_bytes) / std::max<int64_t>(row_bytes, 1));
    const int64_t m_piece = convert_x ? std::min(m, piece_rows) : m;
    const int64_t n_piece = convert_w ? std::min(n, piece_rows) : n;
    DeviceScratch x_scratch, w_scratch;
    if (convert_x) x_scratch = DeviceScratch(static_cast<size_t>(m_piece * row_bytes), stream);
    if (convert_w) w_scratch = DeviceScratch(static_cast<size_t>(n_piece * row_bytes), stream);
    const char* x_base = static_cast<const char*>(x.raw());
    const char* w_base = static_cast<const char*>(w.raw());
    for (int64_t m0 = 0; m0 < m; m0 += m_piece) {
      const int64_t mc = std::min(m_piece, m - m0);
      const void* x_op = x_base + m0 * k * static_cast<int64_t>(dtype_size(x.dtype()));
      if (convert_x) {
        launch_convert(x_op, DType::F32, x_scratch.get(), op_dtype, mc * k, stream);
        x_op = x_scratch.get();
      }
      // With both operands converted (f16 compute on f32 weights) the weight pieces are
      // converted again for every input piece: the price of a bounded workspace.
      for (int64_t n0 = 0; n0 < n; n0 += n_piece) {
        const int64_t nc = std::min(n_piece, n - n0);
        const void* w_op = w_base + n0 * w_row_bytes;
        if (packed) {
          launch_unpack_rows(format, w_op, nc, k, w_scratch.get(), op_dtype, stream);
          w_op = w_scratch.get();
        } else if (convert_w) {
          launch_convert(w_op, w.dtype(), w_scratch.get(), op_dtype, nc * k, stream);
          w_op = w_scratch.get();
        }
        gemm_block(w_op, x_op, t, nc, mc, k, out.data<float>() + m0 * n + n0, n, stream);
      }
    }
    // The scratch buffers are freed in stream order after the last GEMM, on scope exit.
  }
  launch_bias_relu(out.data<float>(), bias, m, n, relu, stream);
}

}  // namespace detail

void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out, ComputeType ct,
            bool relu) {
  detail::linear_in_pieces(x, w, bias, out, ct, relu, gpu_reserve::kGemmOperandChunkBytes);
}

}  // namespace h2oflex::cuda
