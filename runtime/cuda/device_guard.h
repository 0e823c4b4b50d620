// DeviceGuard: makes one CUDA device current for a scope and restores the caller's device after,
// so code that serves cuda:i (ops, tiers, per-device state) never leaks a device switch.
#pragma once

#include <new>

namespace h2oflex::cuda {

// The calling thread's current CUDA device ordinal. Throws CudaError without a usable device.
int current_device();

// Number of CUDA devices (0 when the driver or runtime is unusable). Never throws.
int device_count();

class DeviceGuard {
 public:
  // Throws CudaError when `index` is not a device of this process.
  explicit DeviceGuard(int index);
  // For destructors and deleters (teardown, thread exit): switches when it can and never throws.
  DeviceGuard(int index, std::nothrow_t) noexcept;
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: the device was already current, nothing to restore
};

}  // namespace h2oflex::cuda
