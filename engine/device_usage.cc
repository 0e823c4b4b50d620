#include "engine/device_usage.h"

#include <algorithm>

#ifdef H2OFLEX_WITH_CUDA
#include "runtime/cuda/device.h"
#endif

namespace h2oflex {

DeviceUsageMeter::DeviceUsageMeter(PipelineDevice device) {
#ifdef H2OFLEX_WITH_CUDA
  if (device != PipelineDevice::Cuda || !cuda::cuda_device_available()) return;
  measured_ = true;
  sample();
  at_start_ = peak_;
#else
  (void)device;
#endif
}

void DeviceUsageMeter::sample() {
  if (!measured_) return;
#ifdef H2OFLEX_WITH_CUDA
  const cuda::DeviceMemInfo info = cuda::device_mem_info();
  total_ = info.total_bytes;
  peak_ = std::max<uint64_t>(peak_, info.total_bytes - info.free_bytes);
#endif
}

}  // namespace h2oflex
