// Device discovery and pinned (page-locked) host memory registration.
#pragma once

#include <cstddef>
#include <string>

namespace h2oflex::cuda {

// True when a CUDA driver and at least one device are usable. Never throws; the answer is
// computed once per process.
bool cuda_device_available();

// Why no device is usable (driver or runtime error text), or "" when one is.
std::string cuda_unavailable_reason();

// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" for the current device; throws CudaError if none.
std::string device_description();

// Free and total bytes of the current device.
struct DeviceMemInfo {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};
DeviceMemInfo device_mem_info();

// Page-locks existing host memory (e.g. an anonymous mmap staging buffer that io_uring also
// uses) so host <-> device copies from it are true DMA without a bounce buffer. Throws CudaError
// naming the address and size on failure.
void register_pinned(void* ptr, size_t bytes);
// Undoes register_pinned. Throws CudaError on failure.
void unregister_pinned(void* ptr);

}  // namespace h2oflex::cuda
