// Rotary position embedding (half-split convention, optionally on a leading part of each head).
//
// One block per row: the row's rot_dim / 2 angles are computed once into shared memory with the
// full-precision cosf / sinf (not __cosf, whose error grows with the angle, and positions reach
// the thousands), then every head's pairs are rotated in place.
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 128;

// grid (rows); dynamic shared memory: rot_dim floats (cosines, then sines).
__global__ void rotary_kernel(float* x, const int32_t* positions, const float* inv_freq,
                              int64_t heads, int64_t head_dim, int64_t half) {
  extern __shared__ float smem[];
  const int64_t r = blockIdx.x;
  const int32_t pos = positions[r];
  if (pos < 0) return;  // padding row, the same for the whole block
  float* cos_a = smem;
  float* sin_a = smem + half;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const float angle = static_cast<float>(pos) * inv_freq[i];  // f32, as the reference model
    cos_a[i] = cosf(angle);
    sin_a[i] = sinf(angle);
  }
  __syncthreads();
  float* row = x + r * heads * head_dim;
  for (int64_t e = threadIdx.x; e < heads * half; e += blockDim.x) {
    const int64_t hi = e / half, i = e % half;
    float* first = row + hi * head_dim + i;
    const float a = first[0], b = first[half];
    first[0] = a * cos_a[i] - b * sin_a[i];
    first[half] = b * cos_a[i] + a * sin_a[i];
  }
}

}  // namespace

void rotary_embedding(Tensor& x, const Tensor& positions, int64_t heads, int64_t rot_dim,
                      const Tensor& inv_freq) {
  const int64_t rows = positions.numel();
  if (rows == 0) return;
  H2OFLEX_CHECK(rows <= 0x7fffffff, "rotary_embedding: ", rows, " rows exceed one launch");
  const int64_t head_dim = x.numel() / (rows * heads), half = rot_dim / 2;
  const size_t smem = static_cast<size_t>(rot_dim) * sizeof(float);
  allow_dynamic_smem(rotary_kernel, smem, "rotary_embedding");
  rotary_kernel<<<static_cast<unsigned>(rows), kThreads, smem, current_stream()>>>(
      x.data<float>(), positions.data<const int32_t>(), inv_freq.data<const float>(), heads,
      head_dim, half);
  CUDA_CHECK_LAUNCH("rotary_kernel");
}

}  // namespace h2oflex::cuda
