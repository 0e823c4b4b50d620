// Device tensors and copies between host and device. (The budgeted GPU memory tier the pipeline
// allocates from is offload/tiers/cuda_device_tier.h.)
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "runtime/core/tensor.h"

namespace h2oflex::cuda {

// Unbudgeted device tensors (workspaces, tests) on CUDA device `device`, tagged cuda:`device`;
// without a device, on the current one. Contents of device_empty are undefined.
Tensor device_empty(Shape shape, DType dtype, int device);
Tensor device_empty(Shape shape, DType dtype);
Tensor device_zeros(Shape shape, DType dtype);

// Copies `src` into `dst` (same byte size; either may be on host or device) on `stream`.
// Host memory should be pinned for the copy to be asynchronous.
void copy_async(const Tensor& dst, const Tensor& src, cudaStream_t stream);

// Synchronous copies on the current stream of the device concerned (for tests and setup, not for
// the hot path). to_device without a device copies to the current one.
Tensor to_device(const Tensor& host, int device);
Tensor to_device(const Tensor& host);
Tensor to_host(const Tensor& device);

}  // namespace h2oflex::cuda
