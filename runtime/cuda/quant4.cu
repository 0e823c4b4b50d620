// 4-bit group-wise quantization on the GPU, the twin of runtime/cpu/quant4_cpu.cc (format and
// arithmetic: runtime/core/quant4.h). Explicit _rn intrinsics keep every operation a single
// IEEE-rounded one (nvcc would otherwise fuse lo + code * step), so both backends give the same
// bytes and values.
#include "runtime/core/quant4.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/launchers.h"
#include "runtime/cuda/quant4_device.cuh"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per (row, group).
__global__ void quantize4_kernel(const float* x, int64_t rows, int64_t n, uint8_t* out) {
  const int64_t groups = quant4::groups(n), rb = quant4::row_bytes(n);
  const int64_t total = rows * groups;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = t / groups;
    quantize4_group(x + r * n, n, t % groups, out + r * rb);
  }
}

// One thread per value.
template <typename T>
__global__ void dequantize4_kernel(const uint8_t* in, int64_t rows, int64_t n, T* out) {
  const int64_t rb = quant4::row_bytes(n), total = rows * n;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = t / n, i = t % n;
    const uint8_t* row = in + r * rb;
    const uint8_t* meta = row + quant4::code_bytes(n) + 4 * (i / quant4::kGroup);
    const float lo =
        __half2float(__ushort_as_half(static_cast<unsigned short>(meta[0] | meta[1] << 8)));
    const float step =
        __half2float(__ushort_as_half(static_cast<unsigned short>(meta[2] | meta[3] << 8)));
    const uint8_t b = row[i / 2];
    const float code = static_cast<float>(i % 2 == 0 ? (b & 15) : (b >> 4));
    out[t] = from_f32<T>(__fadd_rn(lo, __fmul_rn(code, step)));
  }
}

}  // namespace

void quantize4(const Tensor& src, Tensor& dst) {
  const int64_t n = src.dim(src.rank() - 1), rows = n == 0 ? 0 : src.numel() / n;
  const int64_t work = rows * quant4::groups(n);
  if (work == 0) return;
  quantize4_kernel<<<grid_for(work, kThreads), kThreads, 0, current_stream()>>>(
      src.data<const float>(), rows, n, dst.data<uint8_t>());
  CUDA_CHECK_LAUNCH("quantize4_kernel");
}

void launch_dequantize4(const void* src, int64_t rows, int64_t n, void* dst, DType dtype,
                        cudaStream_t stream) {
  if (rows * n == 0) return;
  dispatch_float(dtype, "dequantize4", [&](auto tag) {
    using T = decltype(tag);
    dequantize4_kernel<T><<<grid_for(rows * n, kThreads), kThreads, 0, stream>>>(
        static_cast<const uint8_t*>(src), rows, n, static_cast<T*>(dst));
    CUDA_CHECK_LAUNCH("dequantize4_kernel");
  });
}

void dequantize4(const Tensor& src, Tensor& dst) {
  const int64_t n = dst.dim(dst.rank() - 1), rows = n == 0 ? 0 : dst.numel() / n;
  launch_dequantize4(src.raw(), rows, n, dst.raw(), dst.dtype(), current_stream());
}

}  // namespace h2oflex::cuda
