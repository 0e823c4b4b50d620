// The compute device's memory on a GPU: cudaMalloc'd buffers under the tier's budget. Not host-
// addressable, so the transfer engine moves bytes in and out with copy_from_host / copy_to_host
// (disk data is staged through pinned host memory first).
#pragma once

#ifdef H2OFLEX_WITH_CUDA

#include <mutex>
#include <unordered_map>

#include "offload/tiers/memory_tier.h"

namespace h2oflex {

class CudaDeviceTier final : public MemoryTier {
 public:
  // Throws CudaError when no device is usable.
  explicit CudaDeviceTier(uint64_t budget);
  ~CudaDeviceTier() override;
  bool is_host_addressable() const override { return false; }
  void* allocate(size_t bytes, std::string_view what = {}) override;
  void free(void* ptr) override;
  // Synchronous for the calling thread. A transfer queue's worker copies on that queue's named
  // stream, so the queues' copies run concurrently with each other and with compute.
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;

 private:
  std::mutex mutex_;
  std::unordered_map<void*, uint64_t> sizes_;
};

}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
