#include "engine/stage_messages.h"

#include "runtime/ops/ops.h"

namespace h2oflex {

namespace {

// Tags of the stages' messages, one per direction.
constexpr int kHiddenTag = 1;  // stage j -> j + 1: a GPU batch's hidden states
constexpr int kTokensTag = 2;  // last stage -> every other: a GPU batch's chosen token ids

}  // namespace

void StageMessages::receive_hidden(Tensor& hidden) {
  const size_t bytes = static_cast<size_t>(hidden.numel()) * sizeof(float);
  if (hidden.device() != Device::CPU && link_ != nullptr) {
    link_->recv(hidden.raw(), bytes, stage_.rank - 1);
    return;
  }
  if (hidden.device() == Device::CPU) {
    transport_->recv(hidden.raw(), bytes, stage_.rank - 1, kHiddenTag);
    return;
  }
  Tensor host = Tensor::empty(hidden.shape(), DType::F32);
  transport_->recv(host.raw(), bytes, stage_.rank - 1, kHiddenTag);
  ops::copy(host, hidden);
}

uint64_t StageMessages::send_hidden(const Tensor& hidden) {
  const size_t bytes = static_cast<size_t>(hidden.numel()) * sizeof(float);
  if (hidden.device() != Device::CPU && link_ != nullptr) {
    link_->send(hidden.raw(), bytes, stage_.rank + 1);
  } else if (hidden.device() == Device::CPU) {
    transport_->send(hidden.raw(), bytes, stage_.rank + 1, kHiddenTag);
  } else {
    Tensor host = Tensor::empty(hidden.shape(), DType::F32);
    ops::copy(hidden, host);
    transport_->send(host.raw(), bytes, stage_.rank + 1, kHiddenTag);
  }
  return bytes;
}

uint64_t StageMessages::share_tokens(const std::vector<int32_t>& ids) {
  uint64_t sent = 0;
  for (int r = 0; r + 1 < stage_.stages; ++r) {
    transport_->post(ids.data(), ids.size() * sizeof(int32_t), r, kTokensTag);
    sent += ids.size() * sizeof(int32_t);
  }
  return sent;
}

void StageMessages::receive_tokens(std::vector<int32_t>& ids) {
  transport_->recv(ids.data(), ids.size() * sizeof(int32_t), stage_.stages - 1, kTokensTag);
}

}  // namespace h2oflex
