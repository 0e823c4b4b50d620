// Memory tiers addressed by pointers: the compute device's memory and host RAM.
//
// MemoryTier is the seam for a CUDA build: a CUDA device tier implements allocate/free with
// cudaMalloc/cudaFree, reports is_host_addressable() == false, and implements the two host copies
// with cudaMemcpy; the transfer engine then stages disk data through host memory. On a CPU-only
// build the device tier is a separate budget-capped arena in RAM and copies are memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "offload/tiers/tier.h"
#include "runtime/core/byte_ranges.h"

namespace h2oflex {

class MemoryTier : public Tier {
 public:
  using Tier::Tier;

  // Returns `bytes` of tier memory aligned to alignment(); throws TierBudgetError past the
  // budget. The budget is charged with the size rounded up to alignment().
  virtual void* allocate(size_t bytes, std::string_view what = {}) = 0;
  // Releases memory returned by allocate (nullptr is ignored).
  virtual void free(void* ptr) = 0;
  // Copies between host memory and this tier's memory. memcpy for host-addressable tiers.
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes);
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes);
  // Copies the pieces `ranges` of `src` (this tier's memory), packed one after another, to
  // `host_dst`. By default one copy_to_host per piece; a GPU tier gathers them on the device
  // first, so the pieces cost one copy over the bus.
  virtual void gather_to_host(void* host_dst, const void* src, const ByteRanges& ranges);
};

// The compute device's memory, allocated piece by piece from a raw allocator (aligned_alloc,
// cudaMalloc): the budget charge and the size of each allocation are kept here once. Derived
// destructors call release_all() (a base destructor cannot reach their raw_free).
class DeviceMemoryTier : public MemoryTier {
 public:
  void* allocate(size_t bytes, std::string_view what = {}) final;
  void free(void* ptr) final;

 protected:
  DeviceMemoryTier(uint64_t budget, size_t alignment)
      : MemoryTier(TierKind::Device, "device", budget, alignment) {}
  // `bytes` (a multiple of alignment()) or an exception.
  virtual void* raw_allocate(size_t bytes) = 0;
  virtual void raw_free(void* ptr, size_t bytes) = 0;
  // Frees every live allocation; for destructors (errors are ignored).
  void release_all() noexcept;

 private:
  std::mutex mutex_;
  std::unordered_map<void*, uint64_t> sizes_;
};

// The compute device's memory on a CPU-only build: plain RAM with its own budget.
//
// `host_addressable = false` makes it behave like a GPU's memory towards the transfer engine
// and the pipeline (every byte in or out goes through copy_from_host / copy_to_host and the
// staging paths) while the CPU still computes on it: the GPU data path, testable without a GPU.
class CpuDeviceTier final : public DeviceMemoryTier {
 public:
  explicit CpuDeviceTier(uint64_t budget, size_t alignment = 4096, bool host_addressable = true);
  ~CpuDeviceTier() override { release_all(); }
  bool is_host_addressable() const override { return host_addressable_; }
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;

 private:
  void* raw_allocate(size_t bytes) override;
  void raw_free(void* ptr, size_t bytes) override;
  bool host_addressable_;
};

// Notified when host memory becomes pinned (usable for DMA) or stops being so. The transfer
// engine registers such memory with io_uring as fixed buffers; a CUDA build adds a listener
// that calls cudaHostRegister / cudaHostUnregister.
class PinListener {
 public:
  virtual ~PinListener() = default;
  virtual void register_pinned(void* ptr, size_t bytes) = 0;
  // Never throws: buffers are unpinned as they are freed, during teardown after an error too,
  // when a throwing destructor would end the process and hide the error being reported.
  virtual void unregister_pinned(void* ptr, size_t bytes) noexcept = 0;
};

// Host RAM: anonymous mmap memory (page aligned, so O_DIRECT can read into it).
// allocate_pinned() additionally announces the buffer to every PinListener; use it for staging
// buffers and other memory that the disk or a device reads and writes repeatedly.
class HostTier final : public MemoryTier {
 public:
  explicit HostTier(uint64_t budget);
  ~HostTier() override;
  bool is_host_addressable() const override { return true; }
  void* allocate(size_t bytes, std::string_view what = {}) override;
  void* allocate_pinned(size_t bytes, std::string_view what = {});
  void free(void* ptr) override;

  // Listeners see every pinned buffer alive now and later. Remove before destroying one.
  void add_pin_listener(PinListener* listener);
  void remove_pin_listener(PinListener* listener);

 private:
  struct Mapping {
    uint64_t bytes;
    bool pinned;
  };
  void* map(size_t bytes, bool pinned, std::string_view what);

  std::mutex mutex_;
  std::unordered_map<void*, Mapping> mappings_;
  std::vector<PinListener*> listeners_;
};

}  // namespace h2oflex
