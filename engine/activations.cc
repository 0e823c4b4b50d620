#include "engine/activations.h"

namespace h2oflex {

Activations::Activations(int64_t hidden, const policy::MemoryPlan& plan, TierSet& tiers)
    : hidden_(hidden), plan_(plan), tiers_(tiers) {
  const uint64_t bytes = plan.act_bytes;
  const Shape flat{static_cast<int64_t>(bytes / 4)};
  for (TierKind kind : plan.act_home) {
    Home h;
    h.kind = kind;
    if (kind == TierKind::Disk) {
      h.offset = tiers.disk()->allocate(bytes, "activations");
    } else {
      h.ptr = tiers.allocate(kind, bytes, "activations");
      h.tensor = Tensor::wrap(h.ptr, flat, DType::F32, tiers.tensor_device(kind));
    }
    homes_.push_back(std::move(h));
  }
  if (plan.act_workspace) {
    workspace_ = Tensor::wrap(tiers.device().allocate(bytes, "activation workspace"), flat,
                              DType::F32, tiers.compute_device());
  }
}

Location Activations::location(const Home& h) {
  return h.kind == TierKind::Disk ? Location::on_disk(*tiers_.disk(), h.offset)
                                  : tiers_.at(h.kind, h.ptr);
}

void Activations::load(int b, int64_t rows, const std::string& phase) {
  const Home& h = homes_[static_cast<size_t>(b)];
  if (!plan_.staged(h.kind)) return;
  const uint64_t bytes = static_cast<uint64_t>(rows * hidden_) * 4;
  tiers_.transfers()
      .copy(QueueId::Activation, location(h), tiers_.at(TierKind::Device, workspace_.raw()), bytes,
            {phase, DataKind::Activation})
      .wait();
}

void Activations::store(int b, int64_t rows, const std::string& phase) {
  const Home& h = homes_[static_cast<size_t>(b)];
  if (!plan_.staged(h.kind)) return;
  const uint64_t bytes = static_cast<uint64_t>(rows * hidden_) * 4;
  tiers_.transfers()
      .copy(QueueId::Activation, tiers_.at(TierKind::Device, workspace_.raw()), location(h), bytes,
            {phase, DataKind::Activation})
      .wait();
}

Tensor Activations::hidden(int b, int64_t rows) const {
  const Home& h = homes_[static_cast<size_t>(b)];
  const Tensor base = plan_.staged(h.kind) ? workspace_ : h.tensor;
  return base.slice(0, rows * hidden_).reshape({rows, hidden_});
}

}  // namespace h2oflex
