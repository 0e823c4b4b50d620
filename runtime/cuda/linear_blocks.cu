// linear() for a decode step's few input rows on GGUF block weights (q8_0, q4_0, q4_1, q4_k,
// q6_k), the twin of the CPU's fused few-rows kernels (runtime/cpu/linear_compressed_cpu.cc):
// bound by the weight bytes, so each block is read once, decoded in registers and multiplied by
// every input row; no unpacked matrix is written. f32 products and sums whatever the compute
// type, as on the CPU (a 16-bit operand would only add a conversion).
//
// A warp per output column (weight row j): lane l takes values l, l + 32, ... of the row, so a
// warp reads a block's bytes together (coalesced) and the input rows' values l, l + 32, ...
// likewise; each lane keeps one partial sum per input row, added across the warp at the end in
// a fixed order (deterministic). Every warp reads all of x (at most 16 rows): the read-only
// pointers let those reads be served from the cache the block's warps share.
#include "runtime/cuda/gguf_dispatch.cuh"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/launchers.h"

namespace h2oflex::cuda {
namespace {

constexpr int kWarps = 8;  // output columns per thread block
constexpr int kMaxRows = static_cast<int>(kBlockLinearMaxRows);

template <PackedFormat F>
__global__ void linear_blocks_kernel(const float* __restrict__ x, int m, int64_t k,
                                     const uint8_t* __restrict__ w, int64_t n, int64_t row_bytes,
                                     float* __restrict__ out) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / kWarpSize;
  if (j >= n) return;  // the whole warp: no shuffle below misses a lane
  const uint8_t* row = w + j * row_bytes;
  float acc[kMaxRows];
#pragma unroll
  for (int i = 0; i < kMaxRows; ++i) acc[i] = 0.0f;
  for (int64_t t = lane; t < k; t += kWarpSize) {
    const float v = gguf_blocks::row_value<F>(row, static_cast<uint64_t>(t));
#pragma unroll
    for (int i = 0; i < kMaxRows; ++i) {
      if (i < m) acc[i] = fmaf(v, x[i * k + t], acc[i]);
    }
  }
#pragma unroll
  for (int i = 0; i < kMaxRows; ++i) {
    if (i < m) {  // the same for every lane
      const float sum = warp_sum(acc[i]);
      if (lane == 0) out[i * n + j] = sum;
    }
  }
}

}  // namespace

void launch_linear_blocks_few_rows(PackedFormat f, const float* x, int64_t m, int64_t k,
                                   const uint8_t* w, int64_t n, float* out, cudaStream_t stream) {
  H2OFLEX_CHECK(m >= 1 && m <= kBlockLinearMaxRows, "linear on ", packed_format_row(f).name,
                " blocks: ", m, " input rows for the few-rows kernel (at most ",
                kBlockLinearMaxRows, ")");
  if (n == 0) return;
  const auto row_bytes = static_cast<int64_t>(packed_format_row(f).row_bytes(k));
  const int64_t blocks = ceil_div(n, kWarps);
  H2OFLEX_CHECK(blocks <= 0x7fffffff, "linear: ", n, " output columns exceed the launch grid");
  dispatch_gguf_block(f, "linear", [&](auto format) {
    linear_blocks_kernel<decltype(format)::value>
        <<<static_cast<unsigned>(blocks), kWarps * kWarpSize, 0, stream>>>(x, static_cast<int>(m),
                                                                           k, w, n, row_bytes, out);
    CUDA_CHECK_LAUNCH("linear_blocks_kernel");
  });
}

}  // namespace h2oflex::cuda
