// Single-token decode attention over KV slots (f32/f16/bf16 cache) plus the new token, with fp32
// scores and accumulation and per-slot probabilities for H2O.
//
// One block per (sequence, head). Scores of all slots and of the new token live in shared memory
// (capacity + 1 floats); empty slots (position < 0) are never read, so stale or uninitialized
// cache contents cannot leak into the result.
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / kWarpSize;

// grid (b * h); dynamic shared memory: d + cap + 1 floats.
template <typename C>
__global__ void decode_kernel(const float* q, const C* k_cache, const C* v_cache,
                              const int32_t* slot_pos, const float* k_new, const float* v_new,
                              int cap, int d, float scale, float* out, float* slot_probs,
                              float* new_prob) {
  extern __shared__ float smem[];
  __shared__ float scratch[kWarpSize];
  const int64_t bh = blockIdx.x;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* qs = smem;
  float* sc = smem + d;  // sc[0..cap) slots, sc[cap] the new token

  const float* qv = q + bh * d;
  for (int t = threadIdx.x; t < d; t += blockDim.x) qs[t] = qv[t];
  __syncthreads();

  const int32_t* pos = slot_pos + bh * cap;
  const C* kb = k_cache + bh * cap * d;
  const C* vb = v_cache + bh * cap * d;
  for (int j = warp; j < cap; j += kWarps) {
    // pos[j] is the same for every lane, so the whole warp takes the same branch.
    if (pos[j] >= 0) {
      const float dot = warp_dot(qs, kb + static_cast<int64_t>(j) * d, d);
      if (lane == 0) sc[j] = dot * scale;
    } else if (lane == 0) {
      sc[j] = -INFINITY;
    }
  }
  if (warp == 0) {
    const float dot = warp_dot(qs, k_new + bh * d, d);
    if (lane == 0) sc[cap] = dot * scale;
  }
  __syncthreads();

  float mx = -INFINITY;
  for (int j = threadIdx.x; j <= cap; j += blockDim.x) mx = fmaxf(mx, sc[j]);
  mx = block_max(mx, scratch);  // finite: the new token always takes part
  float sum = 0.0f;
  for (int j = threadIdx.x; j <= cap; j += blockDim.x) {
    const float e = (j == cap || pos[j] >= 0) ? expf(sc[j] - mx) : 0.0f;
    sc[j] = e;
    sum += e;
  }
  sum = block_sum(sum, scratch);  // also publishes sc[] to the whole block
  const float inv = 1.0f / sum;

  const float* vn = v_new + bh * d;
  for (int t = threadIdx.x; t < d; t += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < cap; ++j) {
      if (pos[j] < 0) continue;  // never touch an empty slot's (possibly garbage) values
      acc = fmaf(sc[j] * inv, to_f32(vb[static_cast<int64_t>(j) * d + t]), acc);
    }
    acc = fmaf(sc[cap] * inv, vn[t], acc);
    out[bh * d + t] = acc;
  }
  if (slot_probs != nullptr) {
    for (int j = threadIdx.x; j < cap; j += blockDim.x) slot_probs[bh * cap + j] = sc[j] * inv;
  }
  if (new_prob != nullptr && threadIdx.x == 0) new_prob[bh] = sc[cap] * inv;
}

}  // namespace

void attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& slot_pos, const Tensor& k_new, const Tensor& v_new, float scale,
                      Tensor& out, Tensor* slot_probs, Tensor* new_prob) {
  const int64_t b = q.dim(0), h = q.dim(1), d = q.dim(2), cap = k_cache.dim(2);
  const int64_t bh = b * h;
  if (bh == 0) return;
  H2OFLEX_CHECK(bh <= 0x7fffffff && cap < 0x7fffffff && d <= 0x7fffffff,
                "attention_decode: shape exceeds the launch grid");
  cudaStream_t stream = current_stream();
  const size_t smem = static_cast<size_t>(d + cap + 1) * sizeof(float);
  dispatch_float(k_cache.dtype(), "attention_decode KV cache", [&](auto tag) {
    using C = decltype(tag);
    allow_dynamic_smem(decode_kernel<C>, smem, "attention_decode");
    decode_kernel<C><<<static_cast<unsigned>(bh), kThreads, smem, stream>>>(
        q.data<const float>(), k_cache.data<const C>(), v_cache.data<const C>(),
        slot_pos.data<const int32_t>(), k_new.data<const float>(), v_new.data<const float>(),
        static_cast<int>(cap), static_cast<int>(d), scale, out.data<float>(),
        slot_probs != nullptr ? slot_probs->data<float>() : nullptr,
        new_prob != nullptr ? new_prob->data<float>() : nullptr);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace h2oflex::cuda
