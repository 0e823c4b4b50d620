#include "engine/kv_home.h"

#include <algorithm>
#include <set>

#include "runtime/core/storage_format.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

KvHome::KvHome(const KvShape& shape, const policy::MemoryPlan& plan, TierSet& tiers)
    : shape_(shape),
      record_bytes_(kv_storage_format(shape.dtype, shape.packed)
                        .bytes(static_cast<uint64_t>(shape.head_dim))),
      plan_(plan),
      tiers_(tiers) {
  const uint64_t bytes = plan.kv_bytes;
  const Shape meta{shape.batch, shape.heads, shape.slots};
  const uint64_t meta_bytes = static_cast<uint64_t>(shape_numel(meta)) * 4;
  for (int64_t l = 0; l < shape.layers; ++l) {
    const TierKind kind = plan.kv_home[static_cast<size_t>(l)];
    const bool logged = plan.kv_logged(static_cast<int>(l)) && shape.log_compact_every >= 0;
    for (int64_t b = 0; b < shape.batches; ++b) {
      Home h;
      h.kind = kind;
      if (kind == TierKind::Disk) {
        // The log's room only where the plan counted it.
        const uint64_t log_room = plan.kv_logged(static_cast<int>(l)) ? plan.kv_log_bytes : 0;
        h.offset = tiers.disk()->allocate(2 * bytes + log_room, "KV cache");
      } else {
        h.ptr = tiers.allocate(kind, 2 * bytes, "KV cache");
      }
      if (logged) {
        KvLogGeometry g;
        g.records = static_cast<uint64_t>(shape.batch * shape.heads);
        g.slots = static_cast<uint64_t>(shape.slots);
        g.record_bytes = record_bytes_;
        g.kv_bytes = bytes;
        g.block = tiers.disk()->file().block();
        g.log_bytes = plan.kv_log_bytes / g.block * g.block;
        h.log = std::make_unique<KvLog>(g, shape.log_compact_every);
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
    for (void*& p : workspace_)
      p = tiers.allocate(plan.kv_workspace_tier, 2 * bytes, "KV workspace");
  }
}

KvHome::~KvHome() {
  try {
    wait_all_stores();
  } catch (...) {  // an error here is secondary to the one that ended the run
  }
  // Tier memory is released with the tiers; the disk tier's file goes with it.
}

Location KvHome::location(const Home& h) const {
  return h.kind == TierKind::Disk ? Location::on_disk(*tiers_.disk(), h.offset)
                                  : tiers_.at(h.kind, h.ptr);
}

Location KvHome::workspace(int buf) const {
  return tiers_.at(plan_.kv_workspace_tier, workspace_[buf]);
}

std::vector<TransferHandle> KvHome::load(int layer, int batch, int buf, const std::string& phase) {
  std::vector<TransferHandle> handles;
  if (plan_.kv_in_place(layer)) return handles;
  // The buffer's previous store must finish before new data lands in it: the load waits for it
  // on the load queue, so the caller can queue the load ahead of compute without blocking.
  // (Waiting for the load covers the store and its error.)
  std::vector<TransferHandle> stores = std::move(pending_[buf]);
  pending_[buf].clear();
  Home& h = home(layer, batch);
  const TransferTag tag{phase, DataKind::Kv};
  if (h.log) {
    handles.push_back(tiers_.transfers().copy_spans(QueueId::CacheLoad, location(h), workspace(buf),
                                                    h.log->load(), tag, stores));
  } else {
    // A memory home moves whole: a GPU pays per copy far more than the empty slots cost.
    handles.push_back(tiers_.transfers().copy(QueueId::CacheLoad, location(h), workspace(buf),
                                              2 * plan_.kv_bytes, tag, {}, stores));
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
  const bool in_place = plan_.kv_in_place(layer);
  const Device d = tiers_.tensor_device(in_place ? h.kind : plan_.kv_workspace_tier);
  char* base = static_cast<char*>(in_place ? h.ptr : workspace_[buf]);
  KvSlots s = KvSlots::wrap(base, plan_.kv_bytes, shape_.batch, shape_.heads, shape_.slots,
                            shape_.head_dim, shape_.dtype, shape_.packed, d);
  s.pos = h.pos;
  s.score = h.score;
  return s;
}

void KvHome::store(int layer, int batch, int buf, const ChangedSlots* changed,
                   const std::string& phase) {
  if (plan_.kv_in_place(layer)) return;
  Home& h = home(layer, batch);
  if (!h.log) {
    store_scattered(h, buf, changed, phase);
    return;
  }
  ByteSpans spans = changed == nullptr
                        ? h.log->write_base(static_cast<uint64_t>(shape_.prompt_slots))
                        : h.log->store(*changed);
  if (spans.empty()) return;
  pending_[buf].push_back(tiers_.transfers().copy_spans(
      QueueId::CacheStore, workspace(buf), location(h), std::move(spans), {phase, DataKind::Kv}));
}

void KvHome::store_scattered(const Home& h, int buf, const ChangedSlots* changed,
                             const std::string& phase) {
  const uint64_t record = record_bytes_;
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
  for (uint64_t which = 0; which < 2; ++which) {
    pending_[buf].push_back(tiers_.transfers().copy_ranges(
        QueueId::CacheStore, workspace(buf).advanced(which * plan_.kv_bytes),
        location(h).advanced(which * plan_.kv_bytes), ranges, {phase, DataKind::Kv}));
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

int KvHome::log_compactions() const {
  int n = 0;
  for (const Home& h : homes_) n += h.log ? h.log->compactions() : 0;
  return n;
}

}  // namespace h2oflex
