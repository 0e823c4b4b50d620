#include "offload/weights/weight_store.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>

#include "runtime/core/error.h"

namespace h2oflex {

namespace {

std::vector<TensorSpec> specs_of(const WeightLayout& layout) {
  std::vector<TensorSpec> out;
  for (const WeightRecord& r : layout.records()) out.push_back(r.spec);
  return out;
}

}  // namespace

WeightStore::WeightStore(WeightLayout& layout, TransferEngine& transfers, WeightStoreTiers tiers,
                         std::vector<TierKind> homes, bool verify_checksums)
    : WeightStore(specs_of(layout), WeightSource{&layout, {}}, transfers, tiers, std::move(homes),
                  WeightStoreSettings{verify_checksums, false}) {}

WeightStore::WeightStore(std::vector<TensorSpec> specs, WeightSource source,
                         TransferEngine& transfers, WeightStoreTiers tiers,
                         std::vector<TierKind> homes, WeightStoreSettings options)
    : specs_(std::move(specs)),
      source_(std::move(source)),
      transfers_(transfers),
      tiers_(tiers),
      homes_(std::move(homes)),
      options_(options),
      resident_(homes_.size(), nullptr),
      verified_(homes_.size(), false) {
  H2OFLEX_CHECK(homes_.size() == specs_.size(), "weight store: ", homes_.size(), " homes for ",
                specs_.size(), " tensors");
  H2OFLEX_CHECK(source_.layout != nullptr || source_.fill, "weight store: no source");
  if (source_.layout != nullptr) {
    for (const TensorSpec& s : specs_) record_of_.push_back(source_.layout->find(s.name));
  }
  check_homes();
  if (tiers_.disk != nullptr) {
    const uint64_t bytes = bytes_on(TierKind::Disk);
    tiers_.disk->charge(bytes, "disk-homed weights");
    disk_charged_ = bytes;
  }
}

void WeightStore::check_homes() const {
  for (size_t i = 0; i < homes_.size(); ++i) {
    const std::string& name = specs_[i].name;
    H2OFLEX_INPUT_CHECK(homes_[i] != TierKind::Device || tiers_.device != nullptr, "weight '", name,
                        "' is homed on the device tier but there is none");
    H2OFLEX_INPUT_CHECK(homes_[i] != TierKind::Host || tiers_.host != nullptr, "weight '", name,
                        "' is homed on the host tier but there is none");
    H2OFLEX_CHECK(homes_[i] != TierKind::Disk || source_.layout != nullptr, "weight '", name,
                  "' is homed on disk but there is no weight layout");
  }
}

WeightStore::~WeightStore() {
  try {
    release();
  } catch (...) {  // after a device error the frees fail too; that error was reported already
  }
  if (tiers_.disk != nullptr) tiers_.disk->discharge(disk_charged_);
}

void WeightStore::release() {
  // Every tensor is released even when one free fails; the first failure is rethrown after.
  std::exception_ptr first;
  for (size_t i = 0; i < resident_.size(); ++i) {
    if (resident_[i] == nullptr) continue;
    MemoryTier* tier = homes_[i] == TierKind::Device ? tiers_.device : tiers_.host;
    try {
      tier->free(resident_[i]);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    resident_[i] = nullptr;
  }
  if (first) std::rethrow_exception(first);
}

uint64_t WeightStore::bytes_on(TierKind tier) const {
  uint64_t total = 0;
  for (size_t i = 0; i < homes_.size(); ++i) {
    if (homes_[i] == tier) total += specs_[i].bytes;
  }
  return total;
}

size_t WeightStore::find(const std::string& name) const {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == name) return i;
  }
  throw InputError(detail::concat("weight store: no tensor '", name, "'"));
}

const WeightRecord& WeightStore::record(size_t i) const {
  H2OFLEX_CHECK(source_.layout != nullptr, "weight store: no layout");
  return source_.layout->record(record_of_.at(i));
}

void WeightStore::put_home(size_t i, MemoryTier& tier, std::vector<TransferHandle>& pending) {
  const TensorSpec& s = specs_[i];
  const std::string what = "weight '" + s.name + "'";
  resident_[i] = homes_[i] == TierKind::Host && options_.pin_host
                     ? tiers_.host->allocate_pinned(s.bytes, what)
                     : tier.allocate(s.bytes, what);
  const Location dst = Location::in_memory(tier, resident_[i]);
  if (source_.layout != nullptr) {
    const Location src = Location::in_file(source_.layout->file(), record(i).offset);
    pending.push_back(copy_checked(src, i, dst, "load", QueueId::WeightLoad));
  } else if (tier.is_host_addressable()) {
    source_.fill(i, resident_[i]);
  } else if (upload_staging_ != nullptr) {  // the fill writes host memory: pinned, then a copy
    source_.fill(i, upload_staging_);
    tier.copy_from_host(resident_[i], upload_staging_, s.bytes);
  } else {
    std::unique_ptr<std::byte[]> host(new std::byte[s.bytes]);
    source_.fill(i, host.get());
    tier.copy_from_host(resident_[i], host.get(), s.bytes);
  }
}

void WeightStore::materialize() {
  std::vector<TransferHandle> pending;
  uint64_t staging = 0;  // the largest device home filled on the host
  if (options_.pin_upload && source_.layout == nullptr && tiers_.host != nullptr &&
      !tiers_.device->is_host_addressable()) {
    for (size_t i = 0; i < homes_.size(); ++i) {
      if (homes_[i] == TierKind::Device && resident_[i] == nullptr) {
        staging = std::max(staging, specs_[i].bytes);
      }
    }
  }
  struct StagingRelease {  // the staging buffer goes when materialize ends, however it ends
    WeightStore& store;
    ~StagingRelease() {
      try {
        store.tiers_.host->free(store.upload_staging_);
      } catch (...) {
      }
      store.upload_staging_ = nullptr;
    }
  };
  std::optional<StagingRelease> release_staging;
  try {
    if (staging > 0) {
      upload_staging_ = tiers_.host->allocate_pinned(staging, "weight upload staging");
      release_staging.emplace(StagingRelease{*this});
    }
    for (size_t i = 0; i < homes_.size(); ++i) {
      if (homes_[i] == TierKind::Disk || resident_[i] != nullptr) continue;
      MemoryTier* tier = homes_[i] == TierKind::Device ? tiers_.device : tiers_.host;
      put_home(i, *tier, pending);
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
  return Location::in_file(source_.layout->file(), record(i).offset);
}

const void* WeightStore::resident_data(size_t i) const {
  if (resident_.at(i) == nullptr) return nullptr;
  const MemoryTier* tier = homes_[i] == TierKind::Device ? tiers_.device : tiers_.host;
  return tier->is_host_addressable() ? resident_[i] : nullptr;
}

TransferHandle WeightStore::fetch(size_t i, const Location& dst, const std::string& phase,
                                  QueueId queue) {
  return copy_checked(home_location(i), i, dst, phase, queue);
}

TransferHandle WeightStore::copy_checked(const Location& src, size_t i, const Location& dst,
                                         const std::string& phase, QueueId queue) {
  const TensorSpec& s = specs_[i];
  std::function<void()> check;
  // Only bytes read from the layout carry a checksum, and one check per tensor is enough.
  if (options_.verify_checksums && source_.layout != nullptr && src.is_disk() && !verified_[i]) {
    verified_[i] = true;
    const WeightRecord* r = &record(i);
    const std::string path = source_.layout->file().path();
    if (dst.host_addressable()) {
      check = [r, path, ptr = dst.ptr] { check_weight_checksum(*r, path, ptr); };
    } else {  // device memory: read it back to check
      check = [r, path, tier = dst.memory, ptr = dst.ptr, bytes = s.bytes] {
        std::unique_ptr<std::byte[]> host(new std::byte[bytes]);
        tier->copy_to_host(host.get(), ptr, bytes);
        check_weight_checksum(*r, path, host.get());
      };
    }
  }
  return transfers_.copy(queue, src, dst, s.bytes, TransferTag{phase, DataKind::Weight},
                         std::move(check));
}

}  // namespace h2oflex
