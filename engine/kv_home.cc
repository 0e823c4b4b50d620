#include "engine/kv_home.h"

#include <algorithm>
#include <set>

#include "runtime/core/storage_format.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

KvHome::KvHome(const KvShape& shape, const policy::MemoryPlan& plan, TierSet& tiers)
    : shape_(shape), plan_(plan), tiers_(tiers) {
  const uint64_t bytes = plan.kv_bytes;
  const Shape meta{shape.batch, shape.heads, shape.slots};
  const uint64_t meta_bytes = static_cast<uint64_t>(shape_numel(meta)) * 4;
  for (int64_t l = 0; l < shape.layers; ++l) {
    const TierKind kind = plan.kv_home[static_cast<size_t>(l)];
    for (int64_t b = 0; b < shape.batches; ++b) {
      Home h;
      h.kind = kind;
      for (int which = 0; which < 2; ++which) {
        if (kind == TierKind::Disk) {
          h.offset[which] = tiers.disk()->allocate(bytes, "KV cache");
        } else {
          h.ptr[which] = tiers.allocate(kind, bytes, "KV cache");
        }
      }
      const TierKind mt = plan.meta_tier(kind);
      const Device md = tiers.tensor_device(mt);
      h.pos = Tensor::wrap(tiers.allocate(mt, meta_bytes, "KV positions"), meta, DType::I32, md);
      h.score = Tensor::wrap(tiers.allocate(mt, meta_bytes, "KV scores"), meta, DType::F32, md);
      ops::fill(h.pos, -1.0f);
      ops::fill(h.score, 0.0f);
      homes_.push_back(std::move(h));
    }
  }
  if (plan.kv_workspace) {
    for (auto& buf : workspace_) {
      for (void*& p : buf) p = tiers.allocate(plan.kv_workspace_tier, bytes, "KV workspace");
    }
  }
}

KvHome::~KvHome() {
  try {
    wait_all_stores();
  } catch (...) {  // an error here is secondary to the one that ended the run
  }
  // Tier memory is released with the tiers; the disk tier's file goes with it.
}

Location KvHome::location(const Home& h, int which) {
  return h.kind == TierKind::Disk ? Location::on_disk(*tiers_.disk(), h.offset[which])
                                  : tiers_.at(h.kind, h.ptr[which]);
}

std::vector<TransferHandle> KvHome::load(int layer, int batch, int buf, const std::string& phase) {
  std::vector<TransferHandle> handles;
  if (plan_.kv_in_place(layer)) return handles;
  // The buffer's previous store must finish before new data lands in it: the load waits for it
  // on the load queue, so the caller can queue the load ahead of compute without blocking.
  // (Waiting for the load covers the store and its error.)
  std::vector<TransferHandle> stores = std::move(pending_[buf]);
  pending_[buf].clear();
  const Home& h = home(layer, batch);
  for (int which = 0; which < 2; ++which) {
    handles.push_back(
        tiers_.transfers().copy(QueueId::CacheLoad, location(h, which),
                                tiers_.at(plan_.kv_workspace_tier, workspace_[buf][which]),
                                plan_.kv_bytes, {phase, DataKind::Kv}, {}, stores));
  }
  return handles;
}

void KvHome::wait_stores(int buf) {
  for (auto& h : pending_[buf]) h.wait();
  pending_[buf].clear();
}

void KvHome::wait_all_stores() {
  wait_stores(0);
  wait_stores(1);
}

KvSlots KvHome::slots(int layer, int batch, int buf) const {
  const Home& h = home(layer, batch);
  const Shape shape{shape_.batch, shape_.heads, shape_.slots, shape_.head_dim};
  const bool in_place = plan_.kv_in_place(layer);
  const Device d = tiers_.tensor_device(in_place ? h.kind : plan_.kv_workspace_tier);
  KvSlots s;
  s.k = Tensor::wrap(in_place ? h.ptr[0] : workspace_[buf][0], shape, shape_.dtype, d);
  s.v = Tensor::wrap(in_place ? h.ptr[1] : workspace_[buf][1], shape, shape_.dtype, d);
  s.pos = h.pos;
  s.score = h.score;
  return s;
}

void KvHome::store(int layer, int batch, int buf, const ChangedSlots* changed,
                   const std::string& phase) {
  if (plan_.kv_in_place(layer)) return;
  const Home& h = home(layer, batch);
  const uint64_t record =
      StorageFormat::plain(shape_.dtype).bytes(static_cast<uint64_t>(shape_.head_dim));
  const uint64_t slots = static_cast<uint64_t>(shape_.slots);
  const uint64_t used = static_cast<uint64_t>(shape_.batch * shape_.heads) * slots * record;
  TransferEngine::Ranges ranges;
  if (changed == nullptr) {
    ranges.emplace_back(0, used);
  } else {
    // The disk's direct-I/O block (often 512 bytes), not the tier's 4 KiB allocation unit.
    const uint64_t gran = h.kind == TierKind::Disk ? tiers_.disk()->file().block() : record;
    std::set<uint64_t> units;
    for (size_t bh = 0; bh < changed->size(); ++bh) {
      const int32_t slot = (*changed)[bh];
      if (slot < 0) continue;
      const uint64_t begin = (bh * slots + static_cast<uint64_t>(slot)) * record;
      for (uint64_t u = begin / gran; u <= (begin + record - 1) / gran; ++u) units.insert(u);
    }
    for (uint64_t u : units) {
      const uint64_t b = u * gran, e = std::min((u + 1) * gran, plan_.kv_bytes);
      if (!ranges.empty() && ranges.back().first + ranges.back().second == b) {
        ranges.back().second += e - b;
      } else {
        ranges.emplace_back(b, e - b);
      }
    }
  }
  for (int which = 0; which < 2; ++which) {
    pending_[buf].push_back(tiers_.transfers().copy_ranges(
        QueueId::CacheStore, tiers_.at(plan_.kv_workspace_tier, workspace_[buf][which]),
        location(h, which), ranges, {phase, DataKind::Kv}));
  }
}

KeptSets KvHome::kept() const {
  KeptSets out;
  for (int64_t l = 0; l < shape_.layers; ++l) {
    std::vector<std::vector<int32_t>> layer;
    for (int64_t b = 0; b < shape_.batches; ++b) {
      auto part = kept_positions(home(static_cast<int>(l), static_cast<int>(b)).pos);
      layer.insert(layer.end(), part.begin(), part.end());
    }
    out.push_back(std::move(layer));
  }
  return out;
}

}  // namespace h2oflex
