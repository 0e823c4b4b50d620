// The compute device's memory on a GPU: cudaMalloc'd buffers under the tier's budget. Not host-
// addressable, so the transfer engine moves bytes in and out with copy_from_host / copy_to_host
// (disk data is staged through pinned host memory first).
#pragma once

#ifdef H2OFLEX_WITH_CUDA

#include "offload/tiers/memory_tier.h"

namespace h2oflex {

class CudaDeviceTier final : public DeviceMemoryTier {
 public:
  // Throws CudaError when no device is usable.
  explicit CudaDeviceTier(uint64_t budget);
  ~CudaDeviceTier() override { release_all(); }
  bool is_host_addressable() const override { return false; }
  // Synchronous for the calling thread. A transfer queue's worker copies on that queue's named
  // stream, so the queues' copies run concurrently with each other and with compute.
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;

 private:
  void* raw_allocate(size_t bytes) override;
  void raw_free(void* ptr) override;
};

}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
