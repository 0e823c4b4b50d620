// SnapKV's prefill statistic on the device (CPU twin: runtime/cpu/window_scores_cpu.cc): one
// block per (sequence, KV head) keeps the raw window attention of every key in shared memory,
// adds each query's probabilities in the same order as the CPU (query head, then query row; one
// thread owns each key, so no atomics), then max-pools the keys before the window.
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 256;

// grid (kvh, sequences in this chunk); dynamic shared memory: raw[s], logit[s], then 32 floats.
__global__ void window_scores_kernel(const float* q, const float* k, int64_t s, int h, int kvh,
                                     int d, float scale, int window, int pool, SeqInts pad,
                                     int64_t first_seq, float* scores) {
  extern __shared__ float smem[];
  float* raw = smem;
  float* logit = smem + s;
  float* red = logit + s;
  const int g = blockIdx.x, group = h / kvh;
  const int64_t bi = first_seq + blockIdx.y;
  const int64_t p0 = pad.v[blockIdx.y];
  const int64_t w = min(static_cast<int64_t>(window), s - p0), first = s - w;
  for (int64_t j = threadIdx.x; j < s; j += blockDim.x) raw[j] = 0.0f;
  const float* kb = k + (bi * s * kvh + g) * d;
  for (int hi = g * group; hi < (g + 1) * group; ++hi) {
    for (int64_t i = first; i < s; ++i) {
      const float* qi = q + ((bi * s + i) * h + hi) * d;
      float mx = -INFINITY;
      for (int64_t j = p0 + threadIdx.x; j <= i; j += blockDim.x) {
        const float* kj = kb + j * kvh * d;
        float dot = 0.0f;
        for (int e = 0; e < d; ++e) dot = __fadd_rn(dot, __fmul_rn(qi[e], kj[e]));
        logit[j] = __fmul_rn(dot, scale);
        mx = fmaxf(mx, logit[j]);
      }
      mx = block_max(mx, red);
      float part = 0.0f;
      for (int64_t j = p0 + threadIdx.x; j <= i; j += blockDim.x) {
        logit[j] = expf(logit[j] - mx);
        part += logit[j];
      }
      const float sum = block_sum(part, red);
      for (int64_t j = p0 + threadIdx.x; j <= i; j += blockDim.x) {
        raw[j] = __fadd_rn(raw[j], __fdiv_rn(logit[j], sum));
      }
      __syncthreads();
    }
  }
  __syncthreads();
  float* out = scores + (bi * kvh + g) * s;
  const int64_t half = pool / 2;
  for (int64_t j = threadIdx.x; j < s; j += blockDim.x) {
    if (j < p0) {
      out[j] = 0.0f;
    } else if (j >= first) {
      out[j] = raw[j];
    } else {
      float m = -INFINITY;
      const int64_t lo = max(p0, j - half), hi = min(first - 1, j + half);
      for (int64_t t = lo; t <= hi; ++t) m = fmaxf(m, raw[t]);
      out[j] = m;
    }
  }
}

}  // namespace

void window_attention_scores(const Tensor& q, const Tensor& k, const std::vector<int32_t>& pad,
                             float scale, int window, int pool, Tensor& scores) {
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3), kvh = k.dim(2);
  if (b == 0 || s == 0) return;
  const size_t smem = static_cast<size_t>(2 * s + 32) * sizeof(float);
  allow_dynamic_smem(window_scores_kernel, smem, "window_attention_scores");
  cudaStream_t stream = current_stream();
  for_each_seq_chunk(pad, b, [&](int64_t first, int count, const SeqInts& chunk) {
    const dim3 grid(static_cast<unsigned>(kvh), static_cast<unsigned>(count));
    window_scores_kernel<<<grid, kThreads, smem, stream>>>(
        q.data<const float>(), k.data<const float>(), s, static_cast<int>(h), static_cast<int>(kvh),
        static_cast<int>(d), scale, window, pool, chunk, first, scores.data<float>());
    CUDA_CHECK_LAUNCH("window_scores_kernel");
  });
}

}  // namespace h2oflex::cuda
