// Each weight tensor's home tier and the way to bring it to where it is computed on.
//
// Tensors homed on the device or host tier are copied there once from the layout (materialize)
// and charged to that tier's budget; disk-homed tensors stay in the layout file (charged to the
// disk tier's budget when one is given). fetch() copies a tensor from its home to any location
// through the transfer engine, verifying its checksum on arrival when asked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "offload/transfer/transfer_engine.h"
#include "offload/weights/home_tiers.h"
#include "offload/weights/weight_layout.h"

namespace h2oflex {

struct WeightStoreTiers {
  MemoryTier* device = nullptr;  // required when any tensor is homed there
  MemoryTier* host = nullptr;
  DiskTier* disk = nullptr;  // optional: only for budget accounting of disk-homed bytes
};

class WeightStore {
 public:
  // `homes[i]` is the home of layout record i (see assign_home_tiers).
  WeightStore(WeightLayout& layout, TransferEngine& transfers, WeightStoreTiers tiers,
              std::vector<TierKind> homes, bool verify_checksums);
  ~WeightStore();
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // Copies device- and host-homed tensors from the layout into their tiers (queue weight_load,
  // phase "load") and waits; verifies checksums when asked. Throws on budget or I/O errors, after
  // which nothing stays allocated.
  void materialize();

  size_t size() const { return homes_.size(); }
  const WeightRecord& record(size_t i) const { return layout_.record(i); }
  size_t find(const std::string& name) const { return layout_.find(name); }
  TierKind home(size_t i) const { return homes_.at(i); }
  // Where tensor i lives now (its tier memory after materialize, else its layout record).
  Location home_location(size_t i) const;
  // Pointer to the tensor's bytes when its home is a host-addressable memory tier, else null.
  const void* resident_data(size_t i) const;
  // Total bytes homed on each tier.
  uint64_t bytes_on(TierKind tier) const;

  // Copies tensor i from its home to `dst` asynchronously.
  TransferHandle fetch(size_t i, const Location& dst, const std::string& phase,
                       QueueId queue = QueueId::WeightLoad);

 private:
  void release();
  TransferHandle fetch_from_layout(size_t i, const Location& dst, const std::string& phase,
                                   QueueId queue);
  TransferHandle copy_checked(const Location& src, size_t i, const Location& dst,
                              const std::string& phase, QueueId queue);

  WeightLayout& layout_;
  TransferEngine& transfers_;
  WeightStoreTiers tiers_;
  std::vector<TierKind> homes_;
  bool verify_;
  std::vector<void*> resident_;  // per tensor, memory in its home tier (or null)
  uint64_t disk_charged_ = 0;
};

}  // namespace h2oflex
