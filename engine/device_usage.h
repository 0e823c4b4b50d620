// What the driver says of a GPU's memory while a run goes (cudaMemGetInfo: total - free), so a
// run can show that its plan fits the card: the figure counts every byte on the device, the
// context, cuBLAS, the pool and other processes included, which the tiers' own peaks cannot.
#pragma once

#include <cstdint>

#include "engine/pipeline_device.h"

namespace h2oflex {

class DeviceUsageMeter {
 public:
  // Samples at once (the baseline) when `device` is a GPU; otherwise every sample is a no-op.
  explicit DeviceUsageMeter(PipelineDevice device);
  void sample();

  bool measured() const { return measured_; }
  uint64_t used_at_start() const { return at_start_; }
  uint64_t peak_used() const { return peak_; }
  uint64_t total() const { return total_; }

 private:
  bool measured_ = false;
  uint64_t at_start_ = 0, peak_ = 0, total_ = 0;
};

}  // namespace h2oflex
