// Device memory: a budget-accounted allocator for the GPU memory tier, plus small helpers that
// create device tensors and copy tensors between host and device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "runtime/core/error.h"
#include "runtime/core/tensor.h"

namespace h2oflex::cuda {

// An allocation would exceed the device budget. Policies are checked against budgets before a
// run starts, so reaching this is a bug in that estimate.
class DeviceBudgetError : public InternalError {
 public:
  using InternalError::InternalError;
};

// cudaMalloc/cudaFree with a byte budget. Allocations free themselves (and return their bytes to
// the budget) when the last reference to them goes, even after the DeviceMemory is gone.
class DeviceMemory {
 public:
  explicit DeviceMemory(size_t budget_bytes);

  // `bytes` of device memory (256-byte aligned). Throws DeviceBudgetError naming the request,
  // the bytes in use and the budget; CudaError if the device itself is out of memory.
  std::shared_ptr<void> allocate(size_t bytes);
  // A device tensor whose storage comes from allocate().
  Tensor allocate_tensor(Shape shape, DType dtype);

  size_t budget() const;
  size_t used() const;
  size_t peak() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Unbudgeted device tensors (workspaces, tests). Contents of device_empty are undefined.
Tensor device_empty(Shape shape, DType dtype);
Tensor device_zeros(Shape shape, DType dtype);

// Copies `src` into `dst` (same byte size; either may be on host or device) on `stream`.
// Host memory should be pinned for the copy to be asynchronous.
void copy_async(const Tensor& dst, const Tensor& src, cudaStream_t stream);

// Synchronous copies on the current stream (for tests and setup, not for the hot path).
Tensor to_device(const Tensor& host);
Tensor to_host(const Tensor& device);

}  // namespace h2oflex::cuda
