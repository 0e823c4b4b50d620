#include "offload/weights/weight_store.h"

#include "runtime/core/error.h"

namespace h2oflex {

WeightStore::WeightStore(WeightLayout& layout, TransferEngine& transfers, WeightStoreTiers tiers,
                         std::vector<TierKind> homes, bool verify_checksums)
    : layout_(layout),
      transfers_(transfers),
      tiers_(tiers),
      homes_(std::move(homes)),
      verify_(verify_checksums),
      resident_(homes_.size(), nullptr) {
  H2OFLEX_CHECK(homes_.size() == layout_.records().size(), "weight store: ", homes_.size(),
                " homes for ", layout_.records().size(), " tensors");
  for (size_t i = 0; i < homes_.size(); ++i) {
    const std::string& name = layout_.record(i).spec.name;
    H2OFLEX_INPUT_CHECK(homes_[i] != TierKind::Device || tiers_.device != nullptr, "weight '", name,
                        "' is homed on the device tier but there is none");
    H2OFLEX_INPUT_CHECK(homes_[i] != TierKind::Host || tiers_.host != nullptr, "weight '", name,
                        "' is homed on the host tier but there is none");
  }
  if (tiers_.disk != nullptr) {
    const uint64_t bytes = bytes_on(TierKind::Disk);
    tiers_.disk->charge(bytes, "disk-homed weights");
    disk_charged_ = bytes;
  }
}

WeightStore::~WeightStore() {
  release();
  if (tiers_.disk != nullptr) tiers_.disk->discharge(disk_charged_);
}

void WeightStore::release() {
  for (size_t i = 0; i < resident_.size(); ++i) {
    if (resident_[i] == nullptr) continue;
    MemoryTier* tier = homes_[i] == TierKind::Device ? tiers_.device : tiers_.host;
    tier->free(resident_[i]);
    resident_[i] = nullptr;
  }
}

uint64_t WeightStore::bytes_on(TierKind tier) const {
  uint64_t total = 0;
  for (size_t i = 0; i < homes_.size(); ++i) {
    if (homes_[i] == tier) total += layout_.record(i).spec.bytes;
  }
  return total;
}

void WeightStore::materialize() {
  std::vector<TransferHandle> pending;
  try {
    for (size_t i = 0; i < homes_.size(); ++i) {
      if (homes_[i] == TierKind::Disk || resident_[i] != nullptr) continue;
      const WeightRecord& r = layout_.record(i);
      MemoryTier* tier = homes_[i] == TierKind::Device ? tiers_.device : tiers_.host;
      resident_[i] = tier->allocate(r.spec.bytes, "weight '" + r.spec.name + "'");
      pending.push_back(fetch_from_layout(i, Location::in_memory(*tier, resident_[i]), "load",
                                          QueueId::WeightLoad));
    }
    for (auto& h : pending) h.wait();
  } catch (...) {
    for (auto& h : pending) {
      try {
        h.wait();
      } catch (...) {  // the first error is the one reported
      }
    }
    release();
    throw;
  }
}

Location WeightStore::home_location(size_t i) const {
  if (resident_.at(i) != nullptr) {
    MemoryTier* tier = homes_[i] == TierKind::Device ? tiers_.device : tiers_.host;
    return Location::in_memory(*tier, resident_[i]);
  }
  return Location::in_file(layout_.file(), layout_.record(i).offset);
}

const void* WeightStore::resident_data(size_t i) const {
  if (resident_.at(i) == nullptr) return nullptr;
  const MemoryTier* tier = homes_[i] == TierKind::Device ? tiers_.device : tiers_.host;
  return tier->is_host_addressable() ? resident_[i] : nullptr;
}

TransferHandle WeightStore::fetch_from_layout(size_t i, const Location& dst,
                                              const std::string& phase, QueueId queue) {
  return copy_checked(Location::in_file(layout_.file(), layout_.record(i).offset), i, dst, phase,
                      queue);
}

TransferHandle WeightStore::fetch(size_t i, const Location& dst, const std::string& phase,
                                  QueueId queue) {
  return copy_checked(home_location(i), i, dst, phase, queue);
}

TransferHandle WeightStore::copy_checked(const Location& src, size_t i, const Location& dst,
                                         const std::string& phase, QueueId queue) {
  const WeightRecord& r = layout_.record(i);
  std::function<void()> check;
  if (verify_ && dst.host_addressable()) {
    const std::string path = layout_.file().path();
    check = [&r, path, ptr = dst.ptr] { check_weight_checksum(r, path, ptr); };
  }
  return transfers_.copy(queue, src, dst, r.spec.bytes, TransferTag{phase, DataKind::Weight},
                         std::move(check));
}

}  // namespace h2oflex
