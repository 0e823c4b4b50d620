#include "offload/tiers/disk_tier.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace h2oflex {
namespace {

std::string backing_file_name(const std::string& directory) {
  static std::atomic<uint64_t> counter{0};
  std::string dir = directory.empty() ? "." : directory;
  if (dir.back() != '/') dir += '/';
  return detail::concat(dir, "h2oflex-disk-tier-", ::getpid(), "-", counter.fetch_add(1), ".bin");
}

size_t disk_alignment(const DiskFile& f) {
  return std::max<size_t>(4096, f.block());
}

}  // namespace

DiskTier::DiskTier(const std::string& directory, uint64_t budget, DiskFileOptions file_options)
    : DiskTier(DiskFile::open(backing_file_name(directory), FileOpen::CreateTruncate,
                              [&] {
                                file_options.unlink_after_open = true;
                                return file_options;
                              }()),
               budget) {}

DiskTier::DiskTier(std::unique_ptr<DiskFile> file, uint64_t budget)
    : Tier(TierKind::Disk, "disk", budget, disk_alignment(*file)), file_(std::move(file)) {}

DiskTier::~DiskTier() = default;

uint64_t DiskTier::allocate(uint64_t bytes, std::string_view what) {
  const uint64_t rounded = round_up(std::max<uint64_t>(bytes, 1));
  charge(rounded, what);
  std::lock_guard lock(mutex_);
  // First fit among freed ranges, else grow the file.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= rounded) {
      const uint64_t offset = it->first;
      const uint64_t rest = it->second - rounded;
      free_.erase(it);
      if (rest > 0) free_.emplace(offset + rounded, rest);
      allocated_.emplace(offset, rounded);
      return offset;
    }
  }
  const uint64_t offset = end_;
  try {
    // Sized (sparse) up front so that reading a range never written yields zeros, not EOF.
    file_->truncate(end_ + rounded);
  } catch (...) {
    discharge(rounded);
    throw;
  }
  end_ += rounded;
  allocated_.emplace(offset, rounded);
  return offset;
}

void DiskTier::free(uint64_t offset) {
  uint64_t bytes = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = allocated_.find(offset);
    H2OFLEX_CHECK(it != allocated_.end(), "tier 'disk': free of unknown offset ", offset);
    bytes = it->second;
    allocated_.erase(it);
    // Insert and coalesce with neighbours.
    auto [pos, inserted] = free_.emplace(offset, bytes);
    if (pos != free_.begin()) {
      auto prev = std::prev(pos);
      if (prev->first + prev->second == pos->first) {
        prev->second += pos->second;
        free_.erase(pos);
        pos = prev;
      }
    }
    auto next = std::next(pos);
    if (next != free_.end() && pos->first + pos->second == next->first) {
      pos->second += next->second;
      free_.erase(next);
    }
    if (pos->first + pos->second == end_) {  // give the tail back to the file system
      end_ = pos->first;
      free_.erase(pos);
      try {
        file_->truncate(end_);
      } catch (...) {  // keeping a longer file is harmless
      }
    }
  }
  discharge(bytes);
}

}  // namespace h2oflex
