// The memory tiers of one pipeline run (device, host, and disk when the plan uses it), the
// transfer engine between them, and the GPU's view of pinned host memory — built once from the
// memory plan and torn down in the one safe order.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/pipeline_device.h"
#include "offload/tiers/disk_tier.h"
#include "offload/tiers/memory_tier.h"
#include "offload/transfer/transfer_engine.h"
#include "policy/memory_plan.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

// The directory the disk tier uses: `configured` (hardware.disk_path), else the system's
// temporary directory.
std::string disk_path_or_default(const std::string& configured);

class TierSet {
 public:
  // Budgets of 0 in `limits` are unlimited. A plan with disk bytes and no disk_path uses the
  // system's temporary directory (and says so on stderr).
  TierSet(PipelineDevice device, const policy::MemoryPlan& plan,
          const policy::HardwareLimits& limits);
  // Never throws: after a device error, teardown must not hide the error being reported.
  ~TierSet();
  TierSet(const TierSet&) = delete;
  TierSet& operator=(const TierSet&) = delete;

  MemoryTier& device() { return *device_; }
  HostTier& host() { return *host_; }
  DiskTier* disk() { return disk_.get(); }
  TransferEngine& transfers() { return *xfer_; }
  MemoryTier& memory(TierKind kind);  // device or host
  // `bytes` in the device or host tier. Host memory is pinned when a GPU is used, so the copies
  // between it and the GPU are DMA (pageable memory is copied synchronously, through a bounce).
  void* allocate(TierKind kind, uint64_t bytes, std::string_view what);
  // True when host memory that crosses to the device should be pinned for it (a GPU is used).
  bool pins_for_device() const { return device_pins_ != nullptr && dev_.is_cuda(); }
  const std::string& disk_path() const { return disk_path_; }

  // The device tier is memory the CPU cannot compute on in place (a GPU's, or the isolated arena).
  bool separate() const { return separate_; }
  // Tensors in a tier's memory are tagged with the device that computes on them.
  Device tensor_device(TierKind tier) const {
    return tier == TierKind::Device ? dev_ : Device::CPU;
  }
  Device compute_device() const { return dev_; }
  Location at(TierKind kind, void* ptr) { return Location::in_memory(memory(kind), ptr); }

  // Waits for every queued copy, dropping their errors: called before anything those copies
  // read or write (workspaces, the weight layout) is released. Never throws.
  void quiesce() noexcept;

  void reset_peaks();
  std::map<std::string, uint64_t> peaks() const;

 private:
  bool separate_;
  Device dev_;
  std::unique_ptr<MemoryTier> device_;
  std::unique_ptr<HostTier> host_;
  std::unique_ptr<DiskTier> disk_;
  std::unique_ptr<TransferEngine> xfer_;
  std::unique_ptr<PinListener> device_pins_;
  std::string disk_path_;
};

}  // namespace h2oflex
