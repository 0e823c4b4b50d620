// The disk tier: byte ranges in one backing file in a configured directory.
//
// The file is unlinked as soon as it is opened, so it disappears when the tier is destroyed or
// the process dies, on every error path. Allocations are (offset, size) ranges aligned to the
// tier's alignment (the file's direct-I/O block, at least 4096); freed ranges are reused.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "offload/io/disk_file.h"
#include "offload/tiers/tier.h"

namespace h2oflex {

class DiskTier final : public Tier {
 public:
  // Creates the backing file in `directory` (which must exist).
  DiskTier(const std::string& directory, uint64_t budget, DiskFileOptions file_options = {});
  ~DiskTier() override;
  bool is_host_addressable() const override { return false; }

  // Returns the offset of `bytes` (rounded up to alignment()) of file space; throws
  // TierBudgetError past the budget.
  uint64_t allocate(uint64_t bytes, std::string_view what = {});
  void free(uint64_t offset);

  DiskFile& file() { return *file_; }
  // Where the backing file was created (already unlinked).
  const std::string& path() const { return file_->path(); }

 private:
  DiskTier(std::unique_ptr<DiskFile> file, uint64_t budget);

  std::unique_ptr<DiskFile> file_;
  std::mutex mutex_;
  std::map<uint64_t, uint64_t> allocated_;  // offset -> rounded size
  std::map<uint64_t, uint64_t> free_;       // offset -> size, coalesced, all below end_
  uint64_t end_ = 0;                        // high-water mark of the file
};

}  // namespace h2oflex
