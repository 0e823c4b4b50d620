// The KV cache's homes: per (layer, GPU batch) K and V storage in the tier the plan chose, with
// the slot positions and scores beside the attention that reads them; the double-buffered
// workspace a cache off the compute side is loaded into; and write-back of only what changed —
// on disk through a log (kv_log.h), elsewhere as scattered copies of the changed records.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "engine/kv_log.h"
#include "engine/kv_slots.h"
#include "engine/tier_set.h"

namespace h2oflex {

struct KvShape {
  int64_t layers = 0, batches = 0;          // GPU batches per block
  int64_t batch = 0, heads = 0, slots = 0;  // per (layer, GPU batch): batch x kv heads x slots
  int64_t head_dim = 0;
  DType dtype = DType::F32;
  PackedFormat packed = PackedFormat::None;  // rows packed (cache_format), unpacked to dtype
  int64_t prompt_slots = 0;   // slots a record can use after prefill: min(slots, padded prompt)
  int log_compact_every = 0;  // PipelineSpec::kv_log_compact_every
};

class KvHome {
 public:
  KvHome(const KvShape& shape, const policy::MemoryPlan& plan, TierSet& tiers);
  ~KvHome();
  KvHome(const KvHome&) = delete;
  KvHome& operator=(const KvHome&) = delete;

  // Loads (layer, batch) into workspace buffer `buf` unless it is computed on in place: from a
  // logged home only the filled slots and the log. The load starts after that buffer's previous
  // write-back, without blocking the caller.
  std::vector<TransferHandle> load(int layer, int batch, int buf, const std::string& phase);
  // The slots compute works on: the home itself, or workspace buffer `buf`.
  KvSlots slots(int layer, int batch, int buf) const;
  // Writes workspace buffer `buf` back: after prefill (changed == null) the filled slots, else
  // only the changed slot records — appended to a logged home's log (or compacting it), else
  // rounded out to the disk's direct-I/O block and merged when adjacent.
  void store(int layer, int batch, int buf, const ChangedSlots* changed, const std::string& phase);
  void wait_stores(int buf);
  void wait_all_stores();
  // Kept positions per layer, sequences in block order.
  KeptSets kept() const;
  // Compactions of the logged homes so far.
  int log_compactions() const;

 private:
  struct Home {
    TierKind kind = TierKind::Host;
    void* ptr = nullptr;         // K, then V at kv_bytes, in a memory tier
    uint64_t offset = 0;         // K, V and the log on the disk tier
    Tensor pos, score;           // metadata, always addressable by its attention
    std::unique_ptr<KvLog> log;  // the slot table of a logged home
  };
  Location location(const Home& h) const;
  Location workspace(int buf) const;
  const Home& home(int layer, int batch) const {
    return homes_[static_cast<size_t>(layer * shape_.batches + batch)];
  }
  Home& home(int layer, int batch) {
    return homes_[static_cast<size_t>(layer * shape_.batches + batch)];
  }
  void store_scattered(const Home& h, int buf, const ChangedSlots* changed,
                       const std::string& phase);

  KvShape shape_;
  uint64_t record_bytes_;  // one slot of K (or V) of one (sequence, head)
  const policy::MemoryPlan& plan_;
  TierSet& tiers_;
  std::vector<Home> homes_;                  // [layer * batches + batch]
  void* workspace_[2] = {nullptr, nullptr};  // [buf]: K, then V at kv_bytes
  std::vector<TransferHandle> pending_[2];
};

}  // namespace h2oflex
