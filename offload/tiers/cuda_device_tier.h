// The compute device's memory on a GPU: cudaMalloc'd buffers on one CUDA device (cuda:i) under the
// tier's budget. Not host-addressable, so the transfer engine moves bytes in and out with
// copy_from_host / copy_to_host (disk data is staged through pinned host memory first). Each GPU
// of a multi-device run has its own tier, so each stage's budget is its own device's.
#pragma once

#ifdef H2OFLEX_WITH_CUDA

#include "offload/tiers/memory_tier.h"
#include "runtime/core/device.h"

namespace h2oflex {

class CudaDeviceTier final : public DeviceMemoryTier {
 public:
  // Allocates on CUDA device `device`. Throws CudaError when no device is usable, InputError
  // when `device` is not one of this process's devices.
  explicit CudaDeviceTier(uint64_t budget, int device = 0);
  ~CudaDeviceTier() override { release_all(); }
  bool is_host_addressable() const override { return false; }
  // The device the memory is on: tensors viewing it carry this Device.
  Device device() const { return Device::cuda(device_); }
  // Freed op temporaries the device's stream-ordered pool keeps (the memory plan's pool bound);
  // the pool returns the rest to the driver at synchronizations.
  void keep_pool_bytes(uint64_t bytes);
  // Synchronous for the calling thread. A transfer queue's worker copies on that queue's named
  // stream, so the queues' copies run concurrently with each other and with compute.
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  // The pieces are gathered on the device (into a stream-ordered temporary of their packed
  // size), then cross in one copy.
  void gather_to_host(void* host_dst, const void* src, const ByteRanges& ranges) override;

 private:
  void* raw_allocate(size_t bytes) override;
  void raw_free(void* ptr, size_t bytes) override;

  int device_;
};

}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
