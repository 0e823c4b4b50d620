#include "runtime/cuda/device.h"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "runtime/cuda/cuda_check.h"

namespace h2oflex::cuda {
namespace {

struct Availability {
  bool available = false;
  std::string reason;
};

Availability probe() {
  Availability a;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    a.reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    cudaGetLastError();  // the probe must not leave an error behind for later calls
    return a;
  }
  if (count <= 0) {
    a.reason = "no CUDA device found";
    return a;
  }
  a.available = true;
  return a;
}

const Availability& availability() {
  static const Availability a = [] {
    try {
      return probe();
    } catch (...) {
      return Availability{false, "CUDA probe threw an exception"};
    }
  }();
  return a;
}

}  // namespace

bool cuda_device_available() {
  return availability().available;
}

std::string cuda_unavailable_reason() {
  return availability().reason;
}

std::string device_description() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  char buf[320];
  std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

DeviceMemInfo device_mem_info() {
  DeviceMemInfo info;
  CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  return info;
}

void register_pinned(void* ptr, size_t bytes) {
  const cudaError_t err = cudaHostRegister(ptr, bytes, cudaHostRegisterDefault);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw CudaError(::h2oflex::detail::concat("cudaHostRegister(", ptr, ", ", bytes,
                                              " bytes) failed: ", cudaGetErrorName(err), " (",
                                              cudaGetErrorString(err), ")"));
  }
}

void unregister_pinned(void* ptr) {
  const cudaError_t err = cudaHostUnregister(ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw CudaError(::h2oflex::detail::concat("cudaHostUnregister(", ptr,
                                              ") failed: ", cudaGetErrorName(err), " (",
                                              cudaGetErrorString(err), ")"));
  }
}

}  // namespace h2oflex::cuda
