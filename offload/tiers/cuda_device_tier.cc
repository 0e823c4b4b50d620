#include "offload/tiers/cuda_device_tier.h"

#ifdef H2OFLEX_WITH_CUDA

#include <cuda_runtime_api.h>

#include "offload/transfer/transfer_engine.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/scratch.h"
#include "runtime/cuda/streams.h"

namespace h2oflex {

namespace {

// A transfer queue's copies go on its named stream (runtime/cuda/streams.h), so weight loads,
// cache loads and cache stores overlap each other and the compute stream. Activation moves sit
// on the compute critical path (after the kernels that produced them, before those that read
// them): they use the compute stream. Copies from other threads (setup) use it too. The streams
// are those of the tier's device.
cudaStream_t copy_stream(int device) {
  cuda::StreamKind kind = cuda::StreamKind::Compute;
  if (const std::optional<QueueId> q = current_transfer_queue()) {
    switch (*q) {
      case QueueId::WeightLoad:
        kind = cuda::StreamKind::WeightLoad;
        break;
      case QueueId::CacheLoad:
        kind = cuda::StreamKind::CacheLoad;
        break;
      case QueueId::CacheStore:
        kind = cuda::StreamKind::CacheStore;
        break;
      case QueueId::Activation:
        break;
    }
  }
  return cuda::streams(device).get(kind);
}

}  // namespace

// 256-byte alignment is what cudaMalloc guarantees and what the kernels' vector loads need.
CudaDeviceTier::CudaDeviceTier(uint64_t budget, int device)
    : DeviceMemoryTier(budget, 256), device_(device) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  H2OFLEX_INPUT_CHECK(device >= 0 && device < count, "GPU memory tier on ",
                      Device::cuda(device).name(), ", but this process sees ", count,
                      " CUDA device(s)");
}

void CudaDeviceTier::keep_pool_bytes(uint64_t bytes) {
  cuda::set_pool_keep_bytes(device_, bytes);
}

void* CudaDeviceTier::raw_allocate(size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  void* ptr = nullptr;
  CUDA_CHECK(cudaMalloc(&ptr, bytes));
  return ptr;
}

void CudaDeviceTier::raw_free(void* ptr, size_t /*bytes*/) {
  const cuda::DeviceGuard guard(device_);
  CUDA_CHECK(cudaFree(ptr));
}

// The copies run with the tier's device current: a stream can only be used from its device.
void CudaDeviceTier::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  cudaStream_t stream = copy_stream(device_);
  CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudaDeviceTier::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  cudaStream_t stream = copy_stream(device_);
  CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudaDeviceTier::gather_to_host(void* host_dst, const void* src, const ByteRanges& ranges) {
  const uint64_t packed = total_length(ranges);
  if (packed == 0) return;
  const cuda::DeviceGuard guard(device_);
  cudaStream_t stream = copy_stream(device_);
  if (ranges.size() == 1) {
    copy_to_host(host_dst, static_cast<const char*>(src) + ranges[0].first, packed);
    return;
  }
  const cuda::StreamScope scope(stream);
  const cuda::DeviceScratch staging(packed, stream);
  cuda::gather_ranges(src, ranges, staging.get());
  CUDA_CHECK(cudaMemcpyAsync(host_dst, staging.get(), packed, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
