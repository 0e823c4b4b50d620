#include "engine/tier_set.h"

#include <cstdio>
#include <filesystem>

#include "engine/device_pinning.h"
#include "offload/tiers/cuda_device_tier.h"

namespace h2oflex {

namespace {

constexpr uint64_t kUnlimited = ~uint64_t{0} >> 2;

uint64_t budget_or_unlimited(uint64_t b) {
  return b ? b : kUnlimited;
}

}  // namespace

const char* pipeline_device_name(PipelineDevice d) {
  switch (d) {
    case PipelineDevice::Cpu:
      return "cpu";
    case PipelineDevice::CpuIsolated:
      return "cpu-isolated";
    case PipelineDevice::Cuda:
      return "cuda";
  }
  return "?";
}

std::string disk_path_or_default(const std::string& configured) {
  return configured.empty() ? std::filesystem::temp_directory_path().string() : configured;
}

TierSet::TierSet(PipelineDevice device, const policy::MemoryPlan& plan,
                 const policy::HardwareLimits& lim)
    : separate_(device != PipelineDevice::Cpu),
      dev_(device == PipelineDevice::Cuda ? Device::CUDA : Device::CPU) {
  const uint64_t device_budget = budget_or_unlimited(lim.device_mem);
  switch (device) {
    case PipelineDevice::Cpu:
      device_ = std::make_unique<CpuDeviceTier>(device_budget);
      break;
    case PipelineDevice::CpuIsolated:
      device_ = std::make_unique<CpuDeviceTier>(device_budget, 4096, /*host_addressable=*/false);
      break;
    case PipelineDevice::Cuda:
#ifdef H2OFLEX_WITH_CUDA
    {
      auto gpu = std::make_unique<CudaDeviceTier>(device_budget);
      gpu->keep_pool_bytes(plan.gpu_pool_bytes);
      device_ = std::move(gpu);
    }
#else
      throw InputError("compute device 'cuda' requested, but this build has no CUDA backend");
#endif
    break;
  }
  // What the compute device holds outside the tier's own allocations (the ops' buffers; on a
  // GPU also the CUDA context and cuBLAS workspace) is charged up front, so device_mem bounds
  // all of it and the tier's peak shows it.
  if (const uint64_t outside = plan.device_bytes_outside_tier(); outside > 0) {
    device_->charge(outside, plan.gpu ? "the CUDA context, cuBLAS workspace and op temporaries"
                                      : "the ops' working buffers");
  }
  host_ = std::make_unique<HostTier>(budget_or_unlimited(lim.host_mem));
  disk_path_ = lim.disk_path;
  if (plan.on(TierKind::Disk) > 0) {
    if (disk_path_.empty()) {
      disk_path_ = disk_path_or_default(disk_path_);
      std::fprintf(stderr, "disk tier: hardware.disk_path not set, using %s\n", disk_path_.c_str());
    }
    disk_ = std::make_unique<DiskTier>(disk_path_, budget_or_unlimited(lim.disk_mem));
  }
  xfer_ = std::make_unique<TransferEngine>();
  // io_uring fixed buffers only speed up disk reads and writes: without a disk tier, registering
  // every pinned host buffer in every worker's ring is set-up time for nothing.
  if (disk_) xfer_->use_pinned_memory(*host_);
  device_pins_ = make_device_pin_listener();  // GPU builds: pinned for DMA as well
  if (device_pins_) {
    host_->add_pin_listener(device_pins_.get());
    xfer_->pin_bounce_buffers(*device_pins_);  // disk <-> GPU copies stage through them
  }
}

TierSet::~TierSet() {
  // The transfer engine first: it finishes queued copies and unpins its bounce buffers while
  // the pin listener still exists. Errors here are dropped: the run's own error, if any, is the
  // one the user must see.
  try {
    xfer_.reset();
  } catch (...) {
  }
  try {
    if (device_pins_) host_->remove_pin_listener(device_pins_.get());
  } catch (...) {
  }
}

void TierSet::quiesce() noexcept {
  for (int q = 0; q < static_cast<int>(kQueueCount); ++q) {
    try {
      xfer_->drain(static_cast<QueueId>(q));
    } catch (...) {  // the run's own error is the one reported
    }
  }
}

void* TierSet::allocate(TierKind kind, uint64_t bytes, std::string_view what) {
  if (kind == TierKind::Host && pins_for_device()) return host_->allocate_pinned(bytes, what);
  return memory(kind).allocate(bytes, what);
}

MemoryTier& TierSet::memory(TierKind kind) {
  H2OFLEX_CHECK(kind != TierKind::Disk, "tier set: the disk tier is not memory");
  return kind == TierKind::Device ? *device_ : static_cast<MemoryTier&>(*host_);
}

void TierSet::reset_peaks() {
  device_->reset_peak();
  host_->reset_peak();
}

std::map<std::string, uint64_t> TierSet::peaks() const {
  return {
      {"device", device_->peak()}, {"host", host_->peak()}, {"disk", disk_ ? disk_->peak() : 0}};
}

}  // namespace h2oflex
