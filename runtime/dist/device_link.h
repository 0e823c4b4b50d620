// DeviceLink: moves bytes between the GPUs of two pipeline stages directly, device memory to
// device memory (NCCL, nccl_link.h), instead of device -> host -> Transport -> host -> device.
// The pipeline uses one when the job has it (PipelineSpec::device_link) and its tensors are on
// a GPU; the host path through the Transport is the twin it must agree with.
#pragma once

#include <cstddef>

namespace h2oflex {

class DeviceLink {
 public:
  virtual ~DeviceLink() = default;
  // Blocking: returns once `bytes` bytes of this process's device memory have gone to `peer`
  // (send) or arrived from it (recv). Transfers between one pair arrive in the order sent.
  virtual void send(const void* device_data, size_t bytes, int peer) = 0;
  virtual void recv(void* device_data, size_t bytes, int peer) = 0;
};

}  // namespace h2oflex
