// H2O token selection on the device: prefill heavy-hitter + recent selection and per-step
// lowest-score eviction, one block per (sequence, head), with the CPU backend's tie rules.
#include <climits>

#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kSelectThreads = 256;
constexpr int kEvictThreads = 128;

// True if candidate a ranks before candidate b: larger score, then earlier position.
__device__ __forceinline__ bool heavier(float sa, int ia, float sb, int ib) {
  return sa > sb || (sa == sb && ia < ib);
}

// grid (h, sequences in this chunk). Dynamic shared memory: `sorted` (a power of two >= the
// number of candidates) scores and positions, then s flags.
// The candidates are positions p0 .. s - recent - 1; a bitonic sort puts the heaviest first
// (the network sorts any input, so even NaN scores cannot select more than `heavy`).
__global__ void select_heavy_recent_kernel(const float* colsum, int s, int h, SeqInts pad,
                                           int64_t first_seq, int heavy, int recent, int sorted,
                                           int32_t* keep) {
  extern __shared__ float smem[];
  float* key = smem;
  int* idx = reinterpret_cast<int*>(smem + sorted);
  int* chosen = idx + sorted;
  const int hi = blockIdx.x;
  const int64_t bi = first_seq + blockIdx.y;
  const int p0 = pad.v[blockIdx.y];
  const int budget = heavy + recent;
  const float* score = colsum + (bi * h + hi) * s;
  int32_t* out = keep + (bi * h + hi) * budget;

  if (s - p0 <= budget) {  // every real token fits
    for (int t = threadIdx.x; t < budget; t += blockDim.x) out[t] = t < s - p0 ? p0 + t : -1;
    return;
  }
  const int cand_end = s - recent;  // candidates [p0, cand_end), more of them than `heavy`
  const int n_cand = cand_end - p0;
  for (int t = threadIdx.x; t < sorted; t += blockDim.x) {
    if (t < n_cand) {
      key[t] = score[p0 + t];
      idx[t] = p0 + t;
    } else {  // filler sorts after every candidate
      key[t] = -INFINITY;
      idx[t] = INT_MAX;
    }
  }
  for (int t = threadIdx.x; t < s; t += blockDim.x) chosen[t] = 0;
  __syncthreads();

  for (int k = 2; k <= sorted; k *= 2) {
    for (int j = k / 2; j > 0; j /= 2) {
      for (int t = threadIdx.x; t < sorted; t += blockDim.x) {
        const int partner = t ^ j;
        if (partner <= t) continue;
        // Blocks with (t & k) == 0 are ordered heaviest first, the others lightest first.
        const bool heaviest_first = (t & k) == 0;
        const bool swap = heaviest_first ? heavier(key[partner], idx[partner], key[t], idx[t])
                                         : heavier(key[t], idx[t], key[partner], idx[partner]);
        if (swap) {
          const float tk = key[t];
          key[t] = key[partner];
          key[partner] = tk;
          const int ti = idx[t];
          idx[t] = idx[partner];
          idx[partner] = ti;
        }
      }
      __syncthreads();
    }
  }

  for (int t = threadIdx.x; t < heavy; t += blockDim.x) {
    if (idx[t] != INT_MAX) chosen[idx[t]] = 1;  // a filler only ranks this high next to NaNs
  }
  __syncthreads();
  if (threadIdx.x == 0) {  // ascending order: the heavy hitters, then the recent window
    int n_out = 0;
    for (int j = p0; j < cand_end && n_out < heavy; ++j) {
      if (chosen[j]) out[n_out++] = j;
    }
    for (int j = cand_end; j < s; ++j) out[n_out++] = j;
    while (n_out < budget) out[n_out++] = -1;
  }
}

struct Victim {
  float score;
  int pos;
  int slot;  // -1: none
};

// True if a should be evicted before b: lower score, then smaller position, then lower slot.
__device__ __forceinline__ bool evict_first(const Victim& a, const Victim& b) {
  if (a.slot < 0) return false;
  if (b.slot < 0) return true;
  if (a.score != b.score) return a.score < b.score;
  if (a.pos != b.pos) return a.pos < b.pos;
  return a.slot < b.slot;
}

__device__ __forceinline__ Victim shfl_victim(const Victim& v, int offset) {
  return Victim{__shfl_xor_sync(0xffffffffu, v.score, offset),
                __shfl_xor_sync(0xffffffffu, v.pos, offset),
                __shfl_xor_sync(0xffffffffu, v.slot, offset)};
}

__device__ __forceinline__ Victim warp_victim(Victim v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const Victim o = shfl_victim(v, offset);
    if (evict_first(o, v)) v = o;
  }
  return v;
}

// grid (h, sequences in this chunk).
__global__ void evict_lowest_score_kernel(const float* scores, const int32_t* slot_pos, int cap,
                                          int h, SeqInts protect_from, int64_t first_seq,
                                          int32_t* victim) {
  __shared__ Victim per_warp[kEvictThreads / kWarpSize];
  const int hi = blockIdx.x;
  const int64_t bh = (first_seq + blockIdx.y) * h + hi;
  const int limit = protect_from.v[blockIdx.y];
  const float* sc = scores + bh * cap;
  const int32_t* pos = slot_pos + bh * cap;
  Victim best{0.0f, 0, -1};
  for (int j = threadIdx.x; j < cap; j += blockDim.x) {
    const int p = pos[j];
    if (p < 0 || p >= limit) continue;
    const Victim c{sc[j], p, j};
    if (evict_first(c, best)) best = c;
  }
  best = warp_victim(best);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) per_warp[warp] = best;
  __syncthreads();
  if (threadIdx.x == 0) {
    Victim v = per_warp[0];
    for (int w = 1; w < kEvictThreads / kWarpSize; ++w) {
      if (evict_first(per_warp[w], v)) v = per_warp[w];
    }
    victim[bh] = v.slot;
  }
}

// One thread per (sequence, slot): the heads summed in order with round-to-nearest adds, as the
// CPU twin does.
__global__ void average_over_heads_kernel(float* scores, int64_t b, int h, int64_t n) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= b * n) return;
  float* seq = scores + (t / n) * h * n + t % n;
  float sum = 0.0f;
  for (int hi = 0; hi < h; ++hi) sum = __fadd_rn(sum, seq[hi * n]);
  const float mean = __fdiv_rn(sum, static_cast<float>(h));
  for (int hi = 0; hi < h; ++hi) seq[hi * n] = mean;
}

}  // namespace

void select_heavy_recent(const Tensor& colsum, const std::vector<int32_t>& pad, int heavy,
                         int recent, Tensor& keep) {
  const int64_t b = colsum.dim(0), h = colsum.dim(1), s = colsum.dim(2);
  if (b == 0 || h == 0) return;
  H2OFLEX_CHECK(h <= 0x7fffffff && s < (1 << 30), "select_heavy_recent: shape ",
                shape_str(colsum.shape()), " exceeds the launch grid");
  int sorted = 1;
  while (sorted < s) sorted *= 2;
  const size_t smem = static_cast<size_t>(2 * sorted + s) * sizeof(float);
  allow_dynamic_smem(select_heavy_recent_kernel, smem, "select_heavy_recent");
  cudaStream_t stream = current_stream();
  for_each_seq_chunk(pad, b, [&](int64_t first, int count, const SeqInts& chunk) {
    const dim3 grid(static_cast<unsigned>(h), static_cast<unsigned>(count));
    select_heavy_recent_kernel<<<grid, kSelectThreads, smem, stream>>>(
        colsum.data<const float>(), static_cast<int>(s), static_cast<int>(h), chunk, first, heavy,
        recent, sorted, keep.data<int32_t>());
    CUDA_CHECK_LAUNCH("select_heavy_recent_kernel");
  });
}

void evict_lowest_score(const Tensor& scores, const Tensor& slot_pos,
                        const std::vector<int32_t>& protect_from, Tensor& victim) {
  const int64_t b = scores.dim(0), h = scores.dim(1), cap = scores.dim(2);
  if (b == 0 || h == 0) return;
  H2OFLEX_CHECK(h <= 0x7fffffff && cap <= 0x7fffffff, "evict_lowest_score: shape ",
                shape_str(scores.shape()), " exceeds the launch grid");
  cudaStream_t stream = current_stream();
  for_each_seq_chunk(protect_from, b, [&](int64_t first, int count, const SeqInts& chunk) {
    const dim3 grid(static_cast<unsigned>(h), static_cast<unsigned>(count));
    evict_lowest_score_kernel<<<grid, kEvictThreads, 0, stream>>>(
        scores.data<const float>(), slot_pos.data<const int32_t>(), static_cast<int>(cap),
        static_cast<int>(h), chunk, first, victim.data<int32_t>());
    CUDA_CHECK_LAUNCH("evict_lowest_score_kernel");
  });
}

void average_over_heads(Tensor& scores) {
  const int64_t b = scores.dim(0), h = scores.dim(1), n = scores.dim(2);
  if (b == 0 || h == 0 || n == 0) return;
  H2OFLEX_CHECK(h <= 0x7fffffff, "average_over_heads: shape ", shape_str(scores.shape()));
  constexpr int kThreads = 256;
  const int64_t blocks = (b * n + kThreads - 1) / kThreads;
  average_over_heads_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, current_stream()>>>(
      scores.data<float>(), b, static_cast<int>(h), n);
  CUDA_CHECK_LAUNCH("average_over_heads_kernel");
}

}  // namespace h2oflex::cuda
