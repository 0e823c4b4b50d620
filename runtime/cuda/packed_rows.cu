// Pack and unpack of packed rows on the GPU, the twins of runtime/cpu/packed_rows.cc: GGUF's
// blocks through their decoders and packers (runtime/cuda/gguf_blocks.h, bit for bit the CPU's),
// q4_g64 through its own kernels (runtime/cuda/quant4.cu).
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/gguf_dispatch.cuh"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/launchers.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per value: rows of whole blocks lie back to back (gguf_blocks::row_value).
template <PackedFormat F, typename T>
__global__ void unpack_blocks_kernel(const uint8_t* in, int64_t values, T* out) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < values;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[t] = from_f32<T>(gguf_blocks::row_value<F>(in, static_cast<uint64_t>(t)));
  }
}

// One thread per block.
template <PackedFormat F>
__global__ void pack_blocks_kernel(const float* x, int64_t blocks, uint8_t* out) {
  using B = gguf_blocks::Block<F>;
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < blocks;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    B::pack(x + b * B::kValues, out + b * B::kBytes);
  }
}

template <PackedFormat F>
constexpr bool packs_here() {
  return F == PackedFormat::Q8_0 || F == PackedFormat::Q4_0 || F == PackedFormat::Q4_1;
}

int64_t rows_of(const Tensor& values) {
  const int64_t n = values.dim(values.rank() - 1);
  return n == 0 ? 0 : values.numel() / n;
}

}  // namespace

void launch_unpack_rows(PackedFormat f, const void* src, int64_t rows, int64_t n, void* dst,
                        DType dtype, cudaStream_t stream) {
  if (f == PackedFormat::Q4G64) {
    launch_dequantize4(src, rows, n, dst, dtype, stream);
    return;
  }
  const int64_t values = rows * n;
  if (values == 0) return;
  dispatch_gguf_block(f, "unpack", [&](auto format) {
    dispatch_float(dtype, "unpack", [&](auto tag) {
      using T = decltype(tag);
      unpack_blocks_kernel<decltype(format)::value, T>
          <<<grid_for(values, kThreads), kThreads, 0, stream>>>(static_cast<const uint8_t*>(src),
                                                                values, static_cast<T*>(dst));
      CUDA_CHECK_LAUNCH("unpack_blocks_kernel");
    });
  });
}

void launch_pack_rows(PackedFormat f, const float* src, int64_t rows, int64_t n, uint8_t* dst,
                      cudaStream_t stream) {
  dispatch_gguf_block(f, "pack", [&](auto format) {
    constexpr PackedFormat F = decltype(format)::value;
    if constexpr (packs_here<F>()) {
      const int64_t blocks = rows * n / gguf_blocks::Block<F>::kValues;
      if (blocks == 0) return;
      pack_blocks_kernel<F><<<grid_for(blocks, kThreads), kThreads, 0, stream>>>(src, blocks, dst);
      CUDA_CHECK_LAUNCH("pack_blocks_kernel");
    } else {
      throw InternalError(::h2oflex::detail::concat("pack: ", packed_format_row(F).name,
                                                    " cannot be packed (read from files only)"));
    }
  });
}

void pack(const Tensor& src, Tensor& dst) {
  if (dst.packed() == PackedFormat::Q4G64) {
    quantize4(src, dst);
    return;
  }
  launch_pack_rows(dst.packed(), src.data<const float>(), rows_of(src), src.dim(src.rank() - 1),
                   dst.data<uint8_t>(), current_stream());
}

void unpack(const Tensor& src, Tensor& dst) {
  launch_unpack_rows(src.packed(), src.raw(), rows_of(dst), dst.dim(dst.rank() - 1), dst.raw(),
                     dst.dtype(), current_stream());
}

}  // namespace h2oflex::cuda
