// Where a range of bytes lives: a pointer in a memory tier, or an offset in a disk file.
#pragma once

#include <cstdint>

#include "offload/io/disk_file.h"
#include "offload/tiers/disk_tier.h"
#include "offload/tiers/memory_tier.h"

namespace h2oflex {

struct Location {
  TierKind kind = TierKind::Host;
  MemoryTier* memory = nullptr;  // set for device and host locations
  void* ptr = nullptr;
  DiskFile* file = nullptr;  // set for disk locations
  uint64_t offset = 0;

  static Location in_memory(MemoryTier& tier, void* ptr) {
    return Location{tier.kind(), &tier, ptr, nullptr, 0};
  }
  static Location on_disk(DiskTier& tier, uint64_t offset) {
    return Location{TierKind::Disk, nullptr, nullptr, &tier.file(), offset};
  }
  // A range of a file outside any disk tier's allocator (e.g. the weight layout file).
  static Location in_file(DiskFile& file, uint64_t offset) {
    return Location{TierKind::Disk, nullptr, nullptr, &file, offset};
  }

  bool is_disk() const { return file != nullptr; }
  // The CPU can touch the bytes directly.
  bool host_addressable() const { return memory != nullptr && memory->is_host_addressable(); }
  // The same location `bytes` further on.
  Location advanced(uint64_t bytes) const {
    Location l = *this;
    if (is_disk()) {
      l.offset += bytes;
    } else {
      l.ptr = static_cast<char*>(ptr) + bytes;
    }
    return l;
  }
};

}  // namespace h2oflex
