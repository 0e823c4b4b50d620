#include "runtime/cuda/device_guard.h"

#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_check.h"

namespace h2oflex::cuda {

int current_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // the probe must not leave an error behind for later calls
      return 0;
    }
    return n;
  }();
  return count;
}

DeviceGuard::DeviceGuard(int index) {
  const int current = current_device();
  if (current == index) return;  // the common case (one GPU): no driver call
  if (index < 0 || index >= device_count()) {
    throw CudaError(::h2oflex::detail::concat("CUDA device ", index, " requested, ", device_count(),
                                              " present"));
  }
  CUDA_CHECK(cudaSetDevice(index));
  previous_ = current;
}

DeviceGuard::DeviceGuard(int index, std::nothrow_t) noexcept {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current == index) return;
  if (cudaSetDevice(index) == cudaSuccess) {
    previous_ = current;
  } else {
    cudaGetLastError();  // a failed switch must not surface in an unrelated later call
  }
}

DeviceGuard::~DeviceGuard() {
  // A destructor must not throw; the restoring call cannot fail for a device that was current.
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace h2oflex::cuda
