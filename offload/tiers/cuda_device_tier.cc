#include "offload/tiers/cuda_device_tier.h"

#ifdef H2OFLEX_WITH_CUDA

#include <cuda_runtime_api.h>

#include <algorithm>

#include "runtime/cuda/cuda_check.h"

namespace h2oflex {

namespace {

// This thread's copy stream, created on first use and destroyed with the thread.
cudaStream_t thread_copy_stream() {
  struct Owner {
    cudaStream_t stream = nullptr;
    ~Owner() {
      if (stream != nullptr) cudaStreamDestroy(stream);  // a destructor must not throw
    }
  };
  thread_local Owner owner;
  if (owner.stream == nullptr) {
    CUDA_CHECK(cudaStreamCreateWithFlags(&owner.stream, cudaStreamNonBlocking));
  }
  return owner.stream;
}

}  // namespace

// 256-byte alignment is what cudaMalloc guarantees and what the kernels' vector loads need.
CudaDeviceTier::CudaDeviceTier(uint64_t budget)
    : MemoryTier(TierKind::Device, "device", budget, 256) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
}

CudaDeviceTier::~CudaDeviceTier() {
  for (auto& [ptr, bytes] : sizes_) cudaFree(ptr);
}

void* CudaDeviceTier::allocate(size_t bytes, std::string_view what) {
  const uint64_t rounded = round_up(std::max<size_t>(bytes, 1));
  charge(rounded, what);
  void* ptr = nullptr;
  const cudaError_t err = cudaMalloc(&ptr, rounded);
  if (err != cudaSuccess) {
    discharge(rounded);
    CUDA_CHECK(err);
  }
  std::lock_guard lock(mutex_);
  sizes_.emplace(ptr, rounded);
  return ptr;
}

void CudaDeviceTier::free(void* ptr) {
  if (ptr == nullptr) return;
  uint64_t bytes = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = sizes_.find(ptr);
    H2OFLEX_CHECK(it != sizes_.end(), "tier 'device': free of an unknown pointer");
    bytes = it->second;
    sizes_.erase(it);
  }
  CUDA_CHECK(cudaFree(ptr));
  discharge(bytes);
}

void CudaDeviceTier::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  cudaStream_t stream = thread_copy_stream();
  CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void CudaDeviceTier::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  cudaStream_t stream = thread_copy_stream();
  CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
