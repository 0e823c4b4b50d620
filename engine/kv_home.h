// The KV cache's homes: per (layer, GPU batch) K and V storage in the tier the plan chose, with
// the slot positions and scores beside the attention that reads them; the double-buffered
// workspace a cache off the compute side is loaded into; and write-back of only what changed.
#pragma once

#include <string>
#include <vector>

#include "engine/generator.h"
#include "engine/kv_slots.h"
#include "engine/tier_set.h"

namespace h2oflex {

struct KvShape {
  int64_t layers = 0, batches = 0;          // GPU batches per block
  int64_t batch = 0, heads = 0, slots = 0;  // per (layer, GPU batch): batch x kv heads x slots
  int64_t head_dim = 0;
  DType dtype = DType::F32;
};

class KvHome {
 public:
  KvHome(const KvShape& shape, const policy::MemoryPlan& plan, TierSet& tiers);
  ~KvHome();
  KvHome(const KvHome&) = delete;
  KvHome& operator=(const KvHome&) = delete;

  // Loads (layer, batch) into workspace buffer `buf` unless it is computed on in place. The load
  // starts after that buffer's previous write-back, without blocking the caller.
  std::vector<TransferHandle> load(int layer, int batch, int buf, const std::string& phase);
  // The slots compute works on: the home itself, or workspace buffer `buf`.
  KvSlots slots(int layer, int batch, int buf) const;
  // Writes workspace buffer `buf` back: everything after prefill (changed == null), else only
  // the changed slot records — rounded out to the disk's direct-I/O block, merged when adjacent.
  void store(int layer, int batch, int buf, const ChangedSlots* changed, const std::string& phase);
  void wait_stores(int buf);
  void wait_all_stores();
  // Kept positions per layer, sequences in block order.
  KeptSets kept() const;

 private:
  struct Home {
    TierKind kind = TierKind::Host;
    void* ptr[2] = {nullptr, nullptr};  // K, V in a memory tier
    uint64_t offset[2] = {0, 0};        // K, V on the disk tier
    Tensor pos, score;                  // metadata, always addressable by its attention
  };
  Location location(const Home& h, int which);
  const Home& home(int layer, int batch) const {
    return homes_[static_cast<size_t>(layer * shape_.batches + batch)];
  }

  KvShape shape_;
  const policy::MemoryPlan& plan_;
  TierSet& tiers_;
  std::vector<Home> homes_;                                           // [layer * batches + batch]
  void* workspace_[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};  // [buf][k/v]
  std::vector<TransferHandle> pending_[2];
};

}  // namespace h2oflex
