// Token choice on the device: argmax, and temperature + nucleus (top-p) sampling that follows
// the CPU backend step for step so both pick the same ids:
//   prob[i] = exp((l[i] - max) / T) in fp32, normalizer summed in fp64;
//   order: probability descending, equal probabilities by ascending id (a stable sort of ids);
//   nucleus: the shortest prefix whose mass (fp64) reaches top_p;
//   draw: u = uniform(philox(seed, row key, step)[0]); the first prefix whose mass exceeds
//   u * (nucleus mass) ends at the chosen id.
#include <cub/device/device_segmented_sort.cuh>

#include <climits>

#include "runtime/core/gpu_memory_reserve.h"
#include "runtime/core/philox.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/philox_device.h"
#include "runtime/cuda/scratch.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 256;
// Rows sorted per pass (bounds the workspace, which the memory plan charges).
constexpr int64_t kSampleRowChunk = gpu_reserve::kSampleRowChunk;

__global__ void argmax_kernel(const float* logits, int n, int32_t* ids) {
  __shared__ float best_val[kWarpSize];
  __shared__ int best_idx[kWarpSize];
  const float* l = logits + static_cast<int64_t>(blockIdx.x) * n;
  // The largest value, the lowest id among equal ones (NaN never wins, as in std::max_element
  // unless it comes first).
  float bv = -INFINITY;
  int bi = INT_MAX;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float x = l[i];
    if (x > bv || (x == bv && i < bi)) {
      bv = x;
      bi = i;
    }
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, offset);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, offset);
    if (ov > bv || (ov == bv && oi < bi)) {
      bv = ov;
      bi = oi;
    }
  }
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) {
    best_val[warp] = bv;
    best_idx[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x) / kWarpSize; ++w) {
      if (best_val[w] > bv || (best_val[w] == bv && best_idx[w] < bi)) {
        bv = best_val[w];
        bi = best_idx[w];
      }
    }
    ids[blockIdx.x] = bi == INT_MAX ? 0 : bi;  // all NaN: id 0, like the CPU
  }
}

__device__ __forceinline__ double warp_sum_f64(double v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

__device__ __forceinline__ double warp_inclusive_scan_f64(double v) {
  const int lane = threadIdx.x % kWarpSize;
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const double t = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += t;
  }
  return v;
}

// One block per row: unnormalized probabilities (sort keys), ids (sort values), the row's
// normalizer, and the segment offsets of the sort.
__global__ void softmax_numerators_kernel(const float* logits, int n, float temperature,
                                          float* prob, int32_t* ids, double* row_sum,
                                          int* offsets) {
  __shared__ float scratch[kWarpSize];
  __shared__ double partial[kWarpSize];
  const int64_t r = blockIdx.x;
  const float* l = logits + r * n;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, l[i]);
  mx = block_max(mx, scratch);
  double sum = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float p = expf((l[i] - mx) / temperature);
    prob[r * n + i] = p;
    ids[r * n + i] = i;
    sum += p;
  }
  sum = warp_sum_f64(sum);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) partial[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < static_cast<int>(blockDim.x) / kWarpSize; ++w) total += partial[w];
    row_sum[r] = total;
    offsets[r] = static_cast<int>(r * n);
    if (r == gridDim.x - 1) offsets[r + 1] = static_cast<int>((r + 1) * n);
  }
}

// One warp per row over the sorted probabilities: find the nucleus, then the drawn id.
__global__ void nucleus_pick_kernel(const float* sorted_prob, const int32_t* sorted_ids, int n,
                                    const double* row_sum, const uint64_t* row_keys, uint64_t seed,
                                    uint64_t step, float top_p, int32_t* out_ids) {
  const int64_t r = blockIdx.x;
  const int lane = threadIdx.x;
  const float* p = sorted_prob + r * n;
  const int32_t* id = sorted_ids + r * n;
  const double sum = row_sum[r];

  // The nucleus: `count` tokens holding `kept` of the mass (all of them if rounding keeps the
  // total below top_p).
  int count = n;
  double kept = -1.0;
  double carry = 0.0;
  for (int base = 0; base < n; base += kWarpSize) {
    const int i = base + lane;
    const double c = carry + warp_inclusive_scan_f64(i < n ? static_cast<double>(p[i]) / sum : 0.0);
    const unsigned hit = __ballot_sync(0xffffffffu, i < n && c >= static_cast<double>(top_p));
    if (hit != 0) {
      const int f = __ffs(hit) - 1;
      count = base + f + 1;
      kept = __shfl_sync(0xffffffffu, c, f);
      break;
    }
    carry = __shfl_sync(0xffffffffu, c, kWarpSize - 1);
  }
  if (kept < 0.0) kept = carry;

  const float u = uniform_open01(philox4x32_10(seed, row_keys[r], step).w[0]);
  const double target = static_cast<double>(u) * kept;
  int choice = id[count - 1];
  carry = 0.0;
  for (int base = 0; base < count; base += kWarpSize) {
    const int i = base + lane;
    const double c =
        carry + warp_inclusive_scan_f64(i < count ? static_cast<double>(p[i]) / sum : 0.0);
    const unsigned hit = __ballot_sync(0xffffffffu, i < count && c > target);
    if (hit != 0) {
      choice = id[base + __ffs(hit) - 1];
      break;
    }
    carry = __shfl_sync(0xffffffffu, c, kWarpSize - 1);
  }
  if (lane == 0) out_ids[r] = choice;
}

__global__ void philox_kernel(uint64_t key, uint64_t counter_hi, uint64_t first_lo, int64_t count,
                              uint32_t* words) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const Philox4 w = philox4x32_10(key, counter_hi, first_lo + static_cast<uint64_t>(i));
  for (int j = 0; j < 4; ++j) words[4 * i + j] = w.w[j];
}

void copy_ids_to_host(const int32_t* dev_ids, int64_t rows, int32_t* host_ids,
                      cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(host_ids, dev_ids, static_cast<size_t>(rows) * sizeof(int32_t),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

void argmax(const Tensor& logits, std::vector<int32_t>& ids) {
  const int64_t rows = logits.dim(0), n = logits.dim(1);
  ids.assign(static_cast<size_t>(rows), 0);
  if (rows == 0 || n == 0) return;
  H2OFLEX_CHECK(rows <= 0x7fffffff && n <= INT_MAX, "argmax: shape ", shape_str(logits.shape()));
  cudaStream_t stream = current_stream();
  DeviceScratch dev_ids(static_cast<size_t>(rows) * sizeof(int32_t), stream);
  argmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      logits.data<const float>(), static_cast<int>(n), dev_ids.as<int32_t>());
  CUDA_CHECK_LAUNCH("argmax_kernel");
  copy_ids_to_host(dev_ids.as<int32_t>(), rows, ids.data(), stream);
}

void sample(const Tensor& logits, const SampleParams& params, const std::vector<uint64_t>& row_keys,
            uint64_t step, std::vector<int32_t>& ids) {
  const int64_t rows = logits.dim(0), n = logits.dim(1);
  ids.assign(static_cast<size_t>(rows), 0);
  if (rows == 0 || n == 0) return;
  H2OFLEX_CHECK(static_cast<int64_t>(row_keys.size()) == rows, "sample: ", row_keys.size(),
                " row keys for ", rows, " rows");
  const int64_t chunk_rows = std::max<int64_t>(1, std::min<int64_t>(kSampleRowChunk, INT_MAX / n));
  cudaStream_t stream = current_stream();

  for (int64_t first = 0; first < rows; first += chunk_rows) {
    const int64_t r = std::min(chunk_rows, rows - first);
    const int64_t items = r * n;
    DeviceScratch prob_in(static_cast<size_t>(items) * sizeof(float), stream);
    DeviceScratch prob_out(static_cast<size_t>(items) * sizeof(float), stream);
    DeviceScratch ids_in(static_cast<size_t>(items) * sizeof(int32_t), stream);
    DeviceScratch ids_out(static_cast<size_t>(items) * sizeof(int32_t), stream);
    DeviceScratch sums(static_cast<size_t>(r) * sizeof(double), stream);
    DeviceScratch offsets(static_cast<size_t>(r + 1) * sizeof(int), stream);
    DeviceScratch keys(static_cast<size_t>(r) * sizeof(uint64_t), stream);
    DeviceScratch picked(static_cast<size_t>(r) * sizeof(int32_t), stream);
    // Pageable source: the call returns once the bytes are staged, so the vector may go away.
    CUDA_CHECK(cudaMemcpyAsync(keys.get(), row_keys.data() + first,
                               static_cast<size_t>(r) * sizeof(uint64_t), cudaMemcpyHostToDevice,
                               stream));

    softmax_numerators_kernel<<<static_cast<unsigned>(r), kThreads, 0, stream>>>(
        logits.data<const float>() + first * n, static_cast<int>(n), params.temperature,
        prob_in.as<float>(), ids_in.as<int32_t>(), sums.as<double>(), offsets.as<int>());
    CUDA_CHECK_LAUNCH("softmax_numerators_kernel");

    size_t temp_bytes = 0;
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairsDescending(
        nullptr, temp_bytes, prob_in.as<const float>(), prob_out.as<float>(),
        ids_in.as<const int32_t>(), ids_out.as<int32_t>(), items, r, offsets.as<const int>(),
        offsets.as<const int>() + 1, stream));
    // At least one byte: a null workspace would make cub answer the size query again.
    DeviceScratch temp(std::max<size_t>(temp_bytes, 1), stream);
    CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairsDescending(
        temp.get(), temp_bytes, prob_in.as<const float>(), prob_out.as<float>(),
        ids_in.as<const int32_t>(), ids_out.as<int32_t>(), items, r, offsets.as<const int>(),
        offsets.as<const int>() + 1, stream));

    nucleus_pick_kernel<<<static_cast<unsigned>(r), kWarpSize, 0, stream>>>(
        prob_out.as<const float>(), ids_out.as<const int32_t>(), static_cast<int>(n),
        sums.as<const double>(), keys.as<const uint64_t>(), params.seed, step, params.top_p,
        picked.as<int32_t>());
    CUDA_CHECK_LAUNCH("nucleus_pick_kernel");
    copy_ids_to_host(picked.as<int32_t>(), r, ids.data() + first, stream);
  }
}

std::vector<uint32_t> philox_words_on_device(uint64_t key, uint64_t counter_hi, uint64_t first_lo,
                                             int64_t count) {
  std::vector<uint32_t> words(static_cast<size_t>(4 * count));
  if (count == 0) return words;
  cudaStream_t stream = current_stream();
  DeviceScratch dev(words.size() * sizeof(uint32_t), stream);
  philox_kernel<<<static_cast<unsigned>(ceil_div(count, kThreads)), kThreads, 0, stream>>>(
      key, counter_hi, first_lo, count, dev.as<uint32_t>());
  CUDA_CHECK_LAUNCH("philox_kernel");
  CUDA_CHECK(cudaMemcpyAsync(words.data(), dev.get(), words.size() * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return words;
}

}  // namespace h2oflex::cuda
