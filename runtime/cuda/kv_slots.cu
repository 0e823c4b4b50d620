// KV slot stores on the device (prefill scatter, decode insert), fill, and the stream-ordered
// copy and synchronization behind ops::copy / ops::synchronize.
#include <climits>
#include <optional>

#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/gguf_dispatch.cuh"
#include "runtime/cuda/kernel_utils.cuh"
#include "runtime/cuda/quant4_device.cuh"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {
namespace {

constexpr int kThreads = 128;

template <typename T>
__global__ void fill_kernel(T* data, int64_t n, T value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    data[i] = value;
  }
}

// One KV row of d values from src into slot row `row`, by the whole block: converted to the slot
// dtype, or packed in the slots' KV format P (u8 rows: q4_g64 a group per thread, q8_0 a block
// per thread).
template <typename T, PackedFormat P>
__device__ void store_slot_row(const float* src, int64_t d, T* slots, int64_t row) {
  if constexpr (P == PackedFormat::Q4G64) {
    uint8_t* out = slots + row * quant4::row_bytes(d);
    for (int64_t g = threadIdx.x; g < quant4::groups(d); g += blockDim.x) {
      quantize4_group(src, d, g, out);
    }
  } else if constexpr (P == PackedFormat::Q8_0) {
    using B = gguf_blocks::Block<PackedFormat::Q8_0>;
    const int64_t blocks = d / B::kValues;
    uint8_t* out = slots + row * blocks * B::kBytes;
    for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) {
      B::pack(src + b * B::kValues, out + b * B::kBytes);
    }
  } else {
    static_assert(P == PackedFormat::None);
    for (int64_t e = threadIdx.x; e < d; e += blockDim.x) slots[row * d + e] = from_f32<T>(src[e]);
  }
}

// Calls f(T{}, FormatTag<P>{}) with T the element type of KV slots and P their packed format: a
// float type (None), or uint8_t for rows packed in a KV format the GPU stores (q4_g64, q8_0).
template <typename F>
void dispatch_slots(const Tensor& slots, const char* what, F&& f) {
  switch (slots.packed()) {
    case PackedFormat::None:
      dispatch_float(slots.dtype(), what,
                     [&](auto tag) { f(tag, FormatTag<PackedFormat::None>{}); });
      return;
    case PackedFormat::Q4G64:
      f(uint8_t{}, FormatTag<PackedFormat::Q4G64>{});
      return;
    case PackedFormat::Q8_0:
      f(uint8_t{}, FormatTag<PackedFormat::Q8_0>{});
      return;
    default:
      break;
  }
  throw InternalError(::h2oflex::detail::concat(what, ": the GPU stores no KV rows in ",
                                                packed_format_row(slots.packed()).name));
}

// One block per (sequence, head). Thread 0 numbers the kept entries (the compact slot of the
// i-th kept position is how many kept positions precede it) into shared memory; then each
// kept position's d-vector is copied by the whole block, converting f32 to the slot dtype.
template <typename T, PackedFormat P>
__global__ void scatter_prefill_kernel(const float* k, const float* v, const int32_t* keep,
                                       const float* keep_score, bool compact, int64_t s,
                                       int64_t heads, int64_t d, int64_t n_keep, int64_t cap,
                                       T* k_slots, T* v_slots, int32_t* slot_pos,
                                       float* slot_score) {
  extern __shared__ int32_t slot_of[];  // [n_keep]
  const int64_t bh = blockIdx.x;
  const int64_t bi = bh / heads, hi = bh % heads;
  const int32_t* kp = keep + bh * n_keep;
  if (threadIdx.x == 0) {
    int32_t next = 0;
    for (int64_t i = 0; i < n_keep; ++i) {
      const int32_t p = kp[i];
      slot_of[i] = p < 0 ? -1 : (compact ? next++ : p);
    }
  }
  __syncthreads();
  for (int64_t i = 0; i < n_keep; ++i) {
    const int32_t p = kp[i];
    const int32_t slot = slot_of[i];
    if (p < 0 || slot < 0 || slot >= cap) continue;
    const int64_t src = ((bi * s + p) * heads + hi) * d;
    store_slot_row<T, P>(k + src, d, k_slots, bh * cap + slot);
    store_slot_row<T, P>(v + src, d, v_slots, bh * cap + slot);
    if (threadIdx.x == 0) {
      slot_pos[bh * cap + slot] = p;
      slot_score[bh * cap + slot] = keep_score ? keep_score[bh * s + p] : 0.0f;
    }
  }
}

// One block per (sequence, head): the slot is `position` (full cache), else the first empty
// slot, else the victim; then the block writes the d-vectors and thread 0 the metadata.
template <typename T, PackedFormat P>
__global__ void insert_kernel(const float* k_new, const float* v_new, const int32_t* victim,
                              int32_t position, const float* new_score, float fixed_score,
                              int64_t cap, int64_t d, T* k_slots, T* v_slots, int32_t* slot_pos,
                              float* slot_score, int32_t* changed) {
  __shared__ int first_free;
  const int64_t bh = blockIdx.x;
  int32_t* pos = slot_pos + bh * cap;
  if (threadIdx.x == 0) first_free = INT_MAX;
  __syncthreads();
  if (victim != nullptr) {
    for (int64_t j = threadIdx.x; j < cap; j += blockDim.x) {
      if (pos[j] < 0) atomicMin(&first_free, static_cast<int>(j));
    }
  }
  __syncthreads();
  int64_t slot = position;
  if (victim != nullptr) slot = first_free != INT_MAX ? first_free : victim[bh];
  if (slot < 0 || slot >= cap) {
    if (threadIdx.x == 0) changed[bh] = -1;
    return;
  }
  store_slot_row<T, P>(k_new + bh * d, d, k_slots, bh * cap + slot);
  store_slot_row<T, P>(v_new + bh * d, d, v_slots, bh * cap + slot);
  if (threadIdx.x == 0) {
    pos[slot] = position;
    slot_score[bh * cap + slot] = new_score ? new_score[bh] : fixed_score;
    changed[bh] = static_cast<int32_t>(slot);
  }
}

void check_blocks(int64_t blocks, const char* op) {
  H2OFLEX_CHECK(blocks <= 2147483647, op, ": ", blocks, " (sequence, head) pairs exceed the grid");
}

}  // namespace

void copy(const Tensor& src, Tensor& dst) {
  if (src.raw() == dst.raw()) return;  // cudaMemcpy of a buffer onto itself is undefined
  const Device from = src.device(), to = dst.device();
  // The copy runs on the current stream of the device receiving it (of the source for a copy to
  // the host), so it is ordered after the work queued there.
  const int runs_on = to.is_cuda() ? to.index : from.index;
  const bool across = from.is_cuda() && to.is_cuda() && from != to;
  std::optional<Event> source_ready;
  cudaStream_t source_stream = nullptr;
  if (across) {  // ... and after the source device's work that produced `src`
    const DeviceGuard guard(from.index);
    source_stream = current_stream();
    source_ready.emplace();
    source_ready->record(source_stream);
  }
  const DeviceGuard guard(runs_on);
  cudaStream_t stream = current_stream();
  if (across) source_ready->wait(stream);
  copy_async(dst, src, stream);
  if (across) {
    // The source device must not overwrite `src` (a reused buffer) before the copy has read it.
    Event copied;
    copied.record(stream);
    copied.wait(source_stream);
  }
  // Host memory on either end: the caller may read (or free) it as soon as we return.
  if (from.is_cpu() || to.is_cpu()) {
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

void fill(Tensor& t, float value) {
  const int64_t n = t.numel();
  if (n == 0) return;
  cudaStream_t stream = current_stream();
  if (t.dtype() == DType::I32) {
    fill_kernel<int32_t>
        <<<grid_for(n, 256), 256, 0, stream>>>(t.data<int32_t>(), n, static_cast<int32_t>(value));
  } else {
    fill_kernel<float><<<grid_for(n, 256), 256, 0, stream>>>(t.data<float>(), n, value);
  }
  CUDA_CHECK_LAUNCH("fill_kernel");
}

void synchronize() {
  CUDA_CHECK(cudaStreamSynchronize(current_stream()));
}

void kv_scatter_prefill(const Tensor& k, const Tensor& v, const Tensor& keep,
                        const Tensor* keep_score, bool compact, Tensor& k_slots, Tensor& v_slots,
                        Tensor& slot_pos, Tensor& slot_score) {
  const int64_t blocks = keep.dim(0) * keep.dim(1), n_keep = keep.dim(2);
  if (blocks == 0 || n_keep == 0) return;
  check_blocks(blocks, "kv_scatter_prefill");
  const size_t smem = static_cast<size_t>(n_keep) * sizeof(int32_t);
  cudaStream_t stream = current_stream();
  dispatch_slots(k_slots, "kv_scatter_prefill slots", [&](auto tag, auto format) {
    using T = decltype(tag);
    constexpr PackedFormat P = decltype(format)::value;
    allow_dynamic_smem(scatter_prefill_kernel<T, P>, smem, "kv_scatter_prefill");
    scatter_prefill_kernel<T, P><<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(
        k.data<const float>(), v.data<const float>(), keep.data<const int32_t>(),
        keep_score ? keep_score->data<const float>() : nullptr, compact, k.dim(1), k.dim(2),
        k.dim(3), n_keep, k_slots.dim(2), k_slots.data<T>(), v_slots.data<T>(),
        slot_pos.data<int32_t>(), slot_score.data<float>());
    CUDA_CHECK_LAUNCH("scatter_prefill_kernel");
  });
}

void kv_insert(const Tensor& k_new, const Tensor& v_new, const Tensor* victim, int32_t position,
               const Tensor* new_score, float fixed_score, Tensor& k_slots, Tensor& v_slots,
               Tensor& slot_pos, Tensor& slot_score, Tensor& changed) {
  const int64_t blocks = k_slots.dim(0) * k_slots.dim(1);
  if (blocks == 0) return;
  check_blocks(blocks, "kv_insert");
  cudaStream_t stream = current_stream();
  dispatch_slots(k_slots, "kv_insert slots", [&](auto tag, auto format) {
    using T = decltype(tag);
    constexpr PackedFormat P = decltype(format)::value;
    insert_kernel<T, P><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        k_new.data<const float>(), v_new.data<const float>(),
        victim ? victim->data<const int32_t>() : nullptr, position,
        new_score ? new_score->data<const float>() : nullptr, fixed_score, k_slots.dim(2),
        k_new.dim(2), k_slots.data<T>(), v_slots.data<T>(), slot_pos.data<int32_t>(),
        slot_score.data<float>(), changed.data<int32_t>());
    CUDA_CHECK_LAUNCH("insert_kernel");
  });
}

}  // namespace h2oflex::cuda
