// The messages between pipeline stages (runtime/dist), beside the schedule that orders them:
// a GPU batch's hidden states from stage j to j + 1, and the token ids the last stage chose,
// posted to every other stage. Hidden states cross as f32 rows: device to device over the job's
// device link when there is one, else through host memory (device -> host -> transport on a
// GPU). Each direction has its own tag, so the two never pair up with each other.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/pipeline_stage.h"
#include "runtime/core/tensor.h"
#include "runtime/dist/device_link.h"
#include "runtime/dist/transport.h"

namespace h2oflex {

class StageMessages {
 public:
  // `link` may be null (hidden states then go through the transport).
  StageMessages(Transport* transport, DeviceLink* link, const PipelineStage& stage)
      : transport_(transport), link_(link), stage_(stage) {}

  // A GPU batch's hidden rows from the previous stage into `hidden` (batches arrive in the
  // order both stages visit them).
  void receive_hidden(Tensor& hidden);
  // ... to the next stage; `hidden` must be complete (the device synchronized). Returns the
  // bytes sent.
  uint64_t send_hidden(const Tensor& hidden);
  // The last stage's chosen ids of one GPU batch, to every other stage. Posted: a blocking send
  // here, against the hidden states' direction, could wait on a stage that waits on its
  // predecessor that waits on this one. Returns the bytes sent.
  uint64_t share_tokens(const std::vector<int32_t>& ids);
  // On a stage before the last: one GPU batch's ids from the last stage (ids.size() of them).
  void receive_tokens(std::vector<int32_t>& ids);

 private:
  Transport* transport_;
  DeviceLink* link_;
  const PipelineStage& stage_;
};

}  // namespace h2oflex
