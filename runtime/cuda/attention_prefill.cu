// Causal prefill attention over a left-padded prompt, with H2O per-key column sums; grouped-query
// when several query heads share a KV head (query head hi reads KV head hi / group).
//
// Kernel 1 gives one block to each (sequence, query head, query row): the row's scores live in
// shared memory, softmax is fp32, and the row's max and inverse normalizer are kept when column
// sums are wanted. Kernel 2 gives one block to each (sequence, KV head, key column) and recomputes
// the column's probabilities for every query head of the group from those row statistics, adding
// them in a fixed order (head by head, rows in a fixed warp order): the column sums come out
// deterministic (no atomics), so H2O keeps the same tokens on every run. Both kernels round every
// step of a probability the same way (__fmul_rn keeps the compiler from fusing the scale or the
// normalization into a neighbouring add), so each probability kernel 2 adds is bit for bit the
// one kernel 1 weighted the values with.
//
// Layout: q/out [b, s, h, d], element (bi, t, hi, :) at ((bi * s + t) * h + hi) * d; k/v
// [b, s, kvh, d], element (bi, t, gi, :) at ((bi * s + t) * kvh + gi) * d.
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/scratch.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 128;  // 4 warps: one key (kernel 1) or query (kernel 2) per warp
constexpr int kWarps = kThreads / kWarpSize;

struct PrefillShape {
  int s = 0, h = 0, kvh = 0, d = 0;
  int group = 1;  // query heads per KV head: h / kvh
  float scale = 1.0f;
};

__device__ __forceinline__ int64_t q_offset(int64_t bi, int64_t t, int64_t hi,
                                            const PrefillShape& sh) {
  return ((bi * sh.s + t) * sh.h + hi) * sh.d;
}

__device__ __forceinline__ int64_t kv_offset(int64_t bi, int64_t t, int64_t gi,
                                             const PrefillShape& sh) {
  return ((bi * sh.s + t) * sh.kvh + gi) * sh.d;
}

// grid (s, h, sequences in this chunk); dynamic shared memory: d + s floats.
__global__ void prefill_rows_kernel(const float* q, const float* k, const float* v, float* out,
                                    PrefillShape sh, SeqInts pad, int64_t first_seq, float* row_max,
                                    float* row_inv) {
  extern __shared__ float smem[];
  __shared__ float scratch[kWarpSize];
  const int i = blockIdx.x;
  const int hi = blockIdx.y;
  const int64_t bi = first_seq + blockIdx.z;
  const int p0 = pad.v[blockIdx.z];
  const int gi = hi / sh.group;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t kv_stride = static_cast<int64_t>(sh.kvh) * sh.d;  // between positions of a head
  float* oi = out + q_offset(bi, i, hi, sh);
  const int64_t stat = (bi * sh.h + hi) * sh.s + i;

  if (i < p0) {  // a padding query row attends to nothing
    for (int t = threadIdx.x; t < sh.d; t += blockDim.x) oi[t] = 0.0f;
    if (row_max != nullptr && threadIdx.x == 0) {
      row_max[stat] = 0.0f;
      row_inv[stat] = 1.0f;
    }
    return;
  }

  float* qs = smem;
  float* sc = smem + sh.d;
  const float* qi = q + q_offset(bi, i, hi, sh);
  for (int t = threadIdx.x; t < sh.d; t += blockDim.x) qs[t] = qi[t];
  __syncthreads();

  // Keys p0..i; sc[j] holds key p0 + j.
  const int n_keys = i - p0 + 1;
  const float* k0 = k + kv_offset(bi, p0, gi, sh);
  for (int j = warp; j < n_keys; j += kWarps) {
    const float dot = warp_dot(qs, k0 + j * kv_stride, sh.d);
    if (lane == 0) sc[j] = __fmul_rn(dot, sh.scale);
  }
  __syncthreads();

  float mx = -INFINITY;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) mx = fmaxf(mx, sc[j]);
  mx = block_max(mx, scratch);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < n_keys; j += blockDim.x) {
    const float e = expf(sc[j] - mx);
    sc[j] = e;
    sum += e;
  }
  sum = block_sum(sum, scratch);  // also makes every sc[j] visible to the whole block
  const float inv = 1.0f / sum;

  const float* v0 = v + kv_offset(bi, p0, gi, sh);
  for (int t = threadIdx.x; t < sh.d; t += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n_keys; ++j) acc = fmaf(__fmul_rn(sc[j], inv), v0[j * kv_stride + t], acc);
    oi[t] = acc;
  }
  if (row_max != nullptr && threadIdx.x == 0) {
    row_max[stat] = mx;
    row_inv[stat] = inv;
  }
}

// grid (s, kvh, sequences in this chunk); dynamic shared memory: d floats (the key).
// colsum[bi, gi, j] = Σ over the group's query heads and real query rows i >= j of P[i, j]; 0 for
// padding keys.
__global__ void prefill_colsum_kernel(const float* q, const float* k, PrefillShape sh, SeqInts pad,
                                      int64_t first_seq, const float* row_max, const float* row_inv,
                                      float* colsum) {
  extern __shared__ float ks[];
  __shared__ float partial[kWarps];
  const int j = blockIdx.x;
  const int gi = blockIdx.y;
  const int64_t bi = first_seq + blockIdx.z;
  const int p0 = pad.v[blockIdx.z];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t q_stride = static_cast<int64_t>(sh.h) * sh.d;
  const int64_t out_at = (bi * sh.kvh + gi) * sh.s + j;
  if (j < p0) {
    if (threadIdx.x == 0) colsum[out_at] = 0.0f;
    return;
  }
  const float* kj = k + kv_offset(bi, j, gi, sh);
  for (int t = threadIdx.x; t < sh.d; t += blockDim.x) ks[t] = kj[t];
  __syncthreads();

  float acc = 0.0f;  // identical in every lane of a warp
  for (int m = 0; m < sh.group; ++m) {
    const int hi = gi * sh.group + m;
    const float* q0 = q + q_offset(bi, 0, hi, sh);
    const int64_t stat0 = (bi * sh.h + hi) * sh.s;
    for (int i = j + warp; i < sh.s; i += kWarps) {
      // Same operand order and rounding as kernel 1 (query first), so the score, and with it
      // the probability, is bit-identical.
      const float dot = warp_dot(q0 + i * q_stride, ks, sh.d);
      const float e = expf(__fmul_rn(dot, sh.scale) - row_max[stat0 + i]);
      acc += __fmul_rn(e, row_inv[stat0 + i]);
    }
  }
  if (lane == 0) partial[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kWarps; ++w) total += partial[w];
    colsum[out_at] = total;
  }
}

}  // namespace

void attention_prefill(const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::vector<int32_t>& pad, float scale, Tensor& out, Tensor* colsum,
                       ComputeType /*ct: f32 products at every ct (ops.h)*/) {
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3), kvh = k.dim(2);
  if (b == 0 || s == 0 || h == 0) return;
  H2OFLEX_CHECK(s <= 0x7fffffff && h <= 65535 && d <= 0x7fffffff, "attention_prefill: shape ",
                shape_str(q.shape()), " exceeds the launch grid");
  cudaStream_t stream = current_stream();
  PrefillShape sh;
  sh.s = static_cast<int>(s);
  sh.h = static_cast<int>(h);
  sh.kvh = static_cast<int>(kvh);
  sh.group = static_cast<int>(h / kvh);
  sh.d = static_cast<int>(d);
  sh.scale = scale;

  DeviceScratch stats;
  float* row_max = nullptr;
  float* row_inv = nullptr;
  if (colsum != nullptr) {
    const int64_t n = b * h * s;
    stats = DeviceScratch(static_cast<size_t>(2 * n) * sizeof(float), stream);
    row_max = stats.as<float>();
    row_inv = row_max + n;
  }

  const size_t rows_smem = static_cast<size_t>(d + s) * sizeof(float);
  allow_dynamic_smem(prefill_rows_kernel, rows_smem, "attention_prefill");
  const size_t col_smem = static_cast<size_t>(d) * sizeof(float);
  allow_dynamic_smem(prefill_colsum_kernel, col_smem, "attention_prefill column sums");

  for_each_seq_chunk(pad, b, [&](int64_t first, int count, const SeqInts& chunk) {
    const dim3 grid(static_cast<unsigned>(s), static_cast<unsigned>(h),
                    static_cast<unsigned>(count));
    prefill_rows_kernel<<<grid, kThreads, rows_smem, stream>>>(
        q.data<const float>(), k.data<const float>(), v.data<const float>(), out.data<float>(), sh,
        chunk, first, row_max, row_inv);
    CUDA_CHECK_LAUNCH("prefill_rows_kernel");
    if (colsum != nullptr) {
      const dim3 col_grid(static_cast<unsigned>(s), static_cast<unsigned>(kvh),
                          static_cast<unsigned>(count));
      prefill_colsum_kernel<<<col_grid, kThreads, col_smem, stream>>>(
          q.data<const float>(), k.data<const float>(), sh, chunk, first, row_max, row_inv,
          colsum->data<float>());
      CUDA_CHECK_LAUNCH("prefill_colsum_kernel");
    }
  });
}

}  // namespace h2oflex::cuda
