// Single-token decode attention over KV slots (f32/f16/bf16, q8_0 or q4_g64 cache) plus the new
// token, with fp32 scores and accumulation and per-slot probabilities for H2O; grouped-query when
// several query heads share a KV head (query head hi reads KV head hi / group).
//
// One block per (sequence, query head). Scores of all slots and of the new token live in shared
// memory (capacity + 1 floats); empty slots (position < 0) are never read, so stale or
// uninitialized cache contents cannot leak into the result. With shared KV heads, each query
// head's probabilities go to a workspace and a second kernel adds them per KV head in head order
// (deterministic, no atomics).
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/gguf_blocks.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/launchers.h"
#include "runtime/cuda/scratch.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / kWarpSize;

// Value e of KV slot row `row` (rows of d values) of a cache in a float type.
template <typename C>
struct PlainSlotRows {
  const C* rows;
  int d;
  __device__ float operator()(int64_t row, int e) const { return to_f32(rows[row * d + e]); }
};

// ... of a cache packed in q8_0 (cache_format): the value its block decodes to, read in place.
struct Q8_0SlotRows {
  const uint8_t* rows;
  int64_t row_bytes;
  __device__ float operator()(int64_t row, int e) const {
    return gguf_blocks::row_value<PackedFormat::Q8_0>(rows + row * row_bytes,
                                                      static_cast<uint64_t>(e));
  }
};

// grid (b * h); dynamic shared memory: d + cap + 1 floats. slot_probs [b * h, cap] and new_prob
// [b * h] are per query head. R reads the cache's values (PlainSlotRows, Q8_0SlotRows).
template <typename R>
__global__ void decode_kernel(const float* q, R k_cache, R v_cache, const int32_t* slot_pos,
                              const float* k_new, const float* v_new, int h, int kvh, int cap,
                              int d, float scale, float* out, float* slot_probs, float* new_prob) {
  extern __shared__ float smem[];
  __shared__ float scratch[kWarpSize];
  const int64_t bh = blockIdx.x;
  const int group = h / kvh;
  const int64_t bkv = bh / h * kvh + bh % h / group;  // the KV head this query head reads
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* qs = smem;
  float* sc = smem + d;  // sc[0..cap) slots, sc[cap] the new token

  const float* qv = q + bh * d;
  for (int t = threadIdx.x; t < d; t += blockDim.x) qs[t] = qv[t];
  __syncthreads();

  const int32_t* pos = slot_pos + bkv * cap;
  const int64_t row0 = bkv * cap;  // the slot rows of this KV head
  for (int j = warp; j < cap; j += kWarps) {
    // pos[j] is the same for every lane, so the whole warp takes the same branch.
    if (pos[j] >= 0) {
      float part = 0.0f;  // warp_dot's order: lane l takes elements l, l + 32, ...
      for (int e = lane; e < d; e += kWarpSize) part = fmaf(qs[e], k_cache(row0 + j, e), part);
      const float dot = warp_sum(part);
      if (lane == 0) sc[j] = dot * scale;
    } else if (lane == 0) {
      sc[j] = -INFINITY;
    }
  }
  if (warp == 0) {
    const float dot = warp_dot(qs, k_new + bkv * d, d);
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

  const float* vn = v_new + bkv * d;
  for (int t = threadIdx.x; t < d; t += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < cap; ++j) {
      if (pos[j] < 0) continue;  // never touch an empty slot's (possibly garbage) values
      acc = fmaf(sc[j] * inv, v_cache(row0 + j, t), acc);
    }
    acc = fmaf(sc[cap] * inv, vn[t], acc);
    out[bh * d + t] = acc;
  }
  if (slot_probs != nullptr) {
    for (int j = threadIdx.x; j < cap; j += blockDim.x) slot_probs[bh * cap + j] = sc[j] * inv;
  }
  if (new_prob != nullptr && threadIdx.x == 0) new_prob[bh] = sc[cap] * inv;
}

// out[g, j] = Σ_{m < group} per_head[g * group + m, j], added in m order; grid-stride over
// groups * cols.
__global__ void sum_head_groups_kernel(const float* per_head, int64_t groups, int group,
                                       int64_t cols, float* out) {
  const int64_t n = groups * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t g = i / cols, j = i % cols;
    const float* src = per_head + g * group * cols + j;
    float total = 0.0f;
    for (int m = 0; m < group; ++m) total += src[m * cols];
    out[i] = total;
  }
}

void sum_head_groups(const float* per_head, int64_t groups, int group, int64_t cols, float* out,
                     cudaStream_t stream) {
  constexpr int kSumThreads = 256;
  sum_head_groups_kernel<<<grid_for(groups * cols, kSumThreads), kSumThreads, 0, stream>>>(
      per_head, groups, group, cols, out);
  CUDA_CHECK_LAUNCH("sum_head_groups_kernel");
}

}  // namespace

void attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& slot_pos, const Tensor& k_new, const Tensor& v_new, float scale,
                      Tensor& out, Tensor* slot_probs, Tensor* new_prob) {
  const int64_t b = q.dim(0), h = q.dim(1), d = q.dim(2), cap = k_cache.dim(2);
  const int64_t kvh = k_cache.dim(1), group = h / kvh;
  if (k_cache.packed() == PackedFormat::Q4G64) {
    // A compressed cache is dequantized whole into stream-ordered scratch first (as FlexGen
    // decompresses its cache on the GPU), then attended to as f32.
    const Shape values{b, kvh, cap, d};
    const int64_t rows = b * kvh * cap;
    const size_t bytes = static_cast<size_t>(rows * d) * sizeof(float);
    DeviceScratch kf_mem(bytes, current_stream()), vf_mem(bytes, current_stream());
    launch_dequantize4(k_cache.raw(), rows, d, kf_mem.get(), DType::F32, current_stream());
    launch_dequantize4(v_cache.raw(), rows, d, vf_mem.get(), DType::F32, current_stream());
    const Tensor kf = Tensor::wrap(kf_mem.get(), values, DType::F32, k_cache.device());
    const Tensor vf = Tensor::wrap(vf_mem.get(), values, DType::F32, k_cache.device());
    attention_decode(q, kf, vf, slot_pos, k_new, v_new, scale, out, slot_probs, new_prob);
    return;
  }
  const int64_t bh = b * h;
  if (bh == 0) return;
  H2OFLEX_CHECK(bh <= 0x7fffffff && cap < 0x7fffffff && d <= 0x7fffffff,
                "attention_decode: shape exceeds the launch grid");
  cudaStream_t stream = current_stream();
  const size_t smem = static_cast<size_t>(d + cap + 1) * sizeof(float);
  // One query head per KV head writes its probabilities in place; shared KV heads go through a
  // per-query-head workspace that is then summed per group.
  const bool grouped = group > 1 && (slot_probs != nullptr || new_prob != nullptr);
  DeviceScratch per_head;
  float* probs_out = slot_probs != nullptr ? slot_probs->data<float>() : nullptr;
  float* self_out = new_prob != nullptr ? new_prob->data<float>() : nullptr;
  if (grouped) {
    per_head = DeviceScratch(static_cast<size_t>(bh * (cap + 1)) * sizeof(float), stream);
    if (probs_out != nullptr) probs_out = per_head.as<float>();
    if (self_out != nullptr) self_out = per_head.as<float>() + bh * cap;
  }
  const auto launch = [&](auto k_rows, auto v_rows) {
    using R = decltype(k_rows);
    allow_dynamic_smem(decode_kernel<R>, smem, "attention_decode");
    decode_kernel<R><<<static_cast<unsigned>(bh), kThreads, smem, stream>>>(
        q.data<const float>(), k_rows, v_rows, slot_pos.data<const int32_t>(),
        k_new.data<const float>(), v_new.data<const float>(), static_cast<int>(h),
        static_cast<int>(kvh), static_cast<int>(cap), static_cast<int>(d), scale, out.data<float>(),
        probs_out, self_out);
    CUDA_CHECK_LAUNCH("decode_kernel");
  };
  if (k_cache.packed() == PackedFormat::Q8_0) {
    // Read in place: a q8_0 value is an exact product, so this is attention over the values the
    // rows unpack to, without an unpacked copy of the cache.
    const auto rb = static_cast<int64_t>(packed_format_row(PackedFormat::Q8_0).row_bytes(d));
    launch(Q8_0SlotRows{k_cache.data<const uint8_t>(), rb},
           Q8_0SlotRows{v_cache.data<const uint8_t>(), rb});
  } else {
    H2OFLEX_CHECK(k_cache.packed() == PackedFormat::None, "attention_decode: the GPU reads no ",
                  packed_format_row(k_cache.packed()).name, " KV cache");
    dispatch_float(k_cache.dtype(), "attention_decode KV cache", [&](auto tag) {
      using C = decltype(tag);
      const int di = static_cast<int>(d);
      launch(PlainSlotRows<C>{k_cache.data<const C>(), di},
             PlainSlotRows<C>{v_cache.data<const C>(), di});
    });
  }
  if (!grouped) return;
  const int g = static_cast<int>(group);
  if (slot_probs != nullptr) {
    sum_head_groups(probs_out, b * kvh, g, cap, slot_probs->data<float>(), stream);
  }
  if (new_prob != nullptr) {
    sum_head_groups(self_out, b * kvh, g, 1, new_prob->data<float>(), stream);
  }
}

}  // namespace h2oflex::cuda
