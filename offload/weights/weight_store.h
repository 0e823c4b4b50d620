// Each weight tensor's home tier and the way to bring it to where it is computed on: the one
// weight path of the engine.
//
// Tensors homed on the device or host tier are put there once (materialize) and charged to that
// tier's budget — read from the weight layout when there is one, else produced in place by the
// source's fill function; disk-homed tensors stay in the layout file (charged to the disk tier's
// budget when one is given). fetch() copies a tensor from its home to any location through the
// transfer engine; a tensor read from the layout has its checksum verified the first time its
// bytes arrive (on the I/O thread), later fetches of the same bytes skip it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "offload/transfer/transfer_engine.h"
#include "offload/weights/weight_layout.h"
#include "runtime/core/tier_kind.h"

namespace h2oflex {

struct WeightStoreTiers {
  MemoryTier* device = nullptr;  // required when any tensor is homed there
  HostTier* host = nullptr;
  DiskTier* disk = nullptr;  // optional: only for budget accounting of disk-homed bytes
};

// Where the bytes come from: a layout, or (nothing on disk) a function producing tensor i into
// host memory.
struct WeightSource {
  WeightLayout* layout = nullptr;
  std::function<void(size_t index, void* host_dst)> fill;
};

struct WeightStoreSettings {
  bool verify_checksums = true;
  bool pin_host = false;  // host homes are pinned (DMA-able for the GPU and io_uring)
  // Device homes filled on the host (no layout) go up through one pinned staging buffer of the
  // largest such tensor's size, held while materialize runs: a GPU copies pageable memory
  // synchronously and through a bounce of its own.
  bool pin_upload = false;
};

class WeightStore {
 public:
  // `homes[i]` is the home of layout record i (see assign_home_tiers).
  WeightStore(WeightLayout& layout, TransferEngine& transfers, WeightStoreTiers tiers,
              std::vector<TierKind> homes, bool verify_checksums);
  // Tensors `specs` from `source`; a disk home needs source.layout, whose records must include
  // every spec by name.
  WeightStore(std::vector<TensorSpec> specs, WeightSource source, TransferEngine& transfers,
              WeightStoreTiers tiers, std::vector<TierKind> homes, WeightStoreSettings options);
  ~WeightStore();
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // Puts device- and host-homed tensors into their tiers (queue weight_load, phase "load") and
  // waits. Throws on budget or I/O errors, after which nothing stays allocated.
  void materialize();

  size_t size() const { return homes_.size(); }
  const TensorSpec& spec(size_t i) const { return specs_.at(i); }
  TierKind home(size_t i) const { return homes_.at(i); }
  // Where tensor i lives now (its tier memory after materialize, else its layout record).
  Location home_location(size_t i) const;
  // The tensor's bytes in its home tier's memory after materialize (null for disk homes).
  void* resident(size_t i) const { return resident_.at(i); }
  // Pointer to the tensor's bytes when its home is a host-addressable memory tier, else null.
  const void* resident_data(size_t i) const;
  // Total bytes homed on each tier.
  uint64_t bytes_on(TierKind tier) const;
  // Index of the tensor named `name` (InputError when absent).
  size_t find(const std::string& name) const;
  // The layout record of tensor i (requires a layout).
  const WeightRecord& record(size_t i) const;

  // Copies tensor i from its home to `dst` asynchronously.
  TransferHandle fetch(size_t i, const Location& dst, const std::string& phase,
                       QueueId queue = QueueId::WeightLoad);

 private:
  void check_homes() const;
  void release();
  void put_home(size_t i, MemoryTier& tier, std::vector<TransferHandle>& pending);
  TransferHandle copy_checked(const Location& src, size_t i, const Location& dst,
                              const std::string& phase, QueueId queue);

  std::vector<TensorSpec> specs_;
  WeightSource source_;
  std::vector<size_t> record_of_;  // per tensor, its layout record (with a layout)
  TransferEngine& transfers_;
  WeightStoreTiers tiers_;
  std::vector<TierKind> homes_;
  WeightStoreSettings options_;
  std::vector<void*> resident_;     // per tensor, memory in its home tier (or null)
  void* upload_staging_ = nullptr;  // pinned host memory while materialize runs (pin_upload)
  std::vector<bool> verified_;      // per tensor: checksum checked on a first arrival
  uint64_t disk_charged_ = 0;
};

}  // namespace h2oflex
