// Stream-ordered temporary device memory (cudaMallocAsync / cudaFreeAsync): a workspace that is
// released once the work queued before its destruction has finished, without a synchronization.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "runtime/cuda/cuda_check.h"

namespace h2oflex::cuda {

class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes > 0) CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream));
  }
  ~DeviceScratch() {
    if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);  // a destructor must not throw
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  DeviceScratch(DeviceScratch&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), stream_(o.stream_) {}
  DeviceScratch& operator=(DeviceScratch&& o) noexcept {
    if (this != &o) {
      if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      stream_ = o.stream_;
    }
    return *this;
  }

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace h2oflex::cuda
