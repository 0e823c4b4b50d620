#include "engine/compute_device.h"

#include "runtime/core/error.h"

#ifdef H2OFLEX_WITH_CUDA
#include "runtime/cuda/device.h"
#endif

namespace h2oflex {

bool cuda_compute_available(std::string* reason) {
#ifdef H2OFLEX_WITH_CUDA
  if (cuda::cuda_device_available()) return true;
  if (reason) *reason = "no CUDA device: " + cuda::cuda_unavailable_reason();
#else
  if (reason) *reason = "this build has no CUDA backend";
#endif
  return false;
}

PipelineDevice resolve_compute_device(const std::string& choice, const std::string& key,
                                      bool planning_only) {
  if (choice == "cpu") return PipelineDevice::Cpu;
  if (choice == "auto") {
    return cuda_compute_available() ? PipelineDevice::Cuda : PipelineDevice::Cpu;
  }
  H2OFLEX_INPUT_CHECK(choice == "cuda", key, ": expected auto, cpu or cuda, got '", choice, "'");
  if (planning_only) return PipelineDevice::Cuda;
  std::string why;
  H2OFLEX_INPUT_CHECK(cuda_compute_available(&why), key, ": cuda requested, but ", why);
  return PipelineDevice::Cuda;
}

}  // namespace h2oflex
