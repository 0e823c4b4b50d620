// Memory tiers: where bytes live (compute device memory, host RAM, disk), each with a byte
// budget from configuration, an alignment, and current / peak usage.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "runtime/core/error.h"
#include "runtime/core/tier_kind.h"

namespace h2oflex {

// An allocation would exceed a tier's configured budget (a configuration problem: exit code 2).
class TierBudgetError : public InputError {
 public:
  using InputError::InputError;
};

// Budget and usage bookkeeping shared by every tier. Thread-safe.
class Tier {
 public:
  Tier(TierKind kind, std::string name, uint64_t budget, size_t alignment);
  virtual ~Tier() = default;
  Tier(const Tier&) = delete;
  Tier& operator=(const Tier&) = delete;

  const std::string& name() const { return name_; }
  TierKind kind() const { return kind_; }
  // Allocation granularity and address/offset alignment of this tier.
  size_t alignment() const { return alignment_; }
  // True when the CPU can read and write this tier's memory through plain pointers.
  virtual bool is_host_addressable() const = 0;

  uint64_t budget() const { return budget_; }
  uint64_t used() const;
  uint64_t peak() const;
  void reset_peak();

  // Accounts `bytes` against the budget (throws TierBudgetError naming the tier, the request,
  // the budget and what is in use). Allocation calls this; callers that place data in the tier
  // by other means (e.g. a weight file on the disk tier's device) may call it directly.
  void charge(uint64_t bytes, std::string_view what = {});
  void discharge(uint64_t bytes);

  // Rounds `bytes` up to this tier's alignment.
  uint64_t round_up(uint64_t bytes) const;

 private:
  TierKind kind_;
  std::string name_;
  uint64_t budget_;
  size_t alignment_;
  mutable std::mutex mutex_;
  uint64_t used_ = 0;
  uint64_t peak_ = 0;
};

}  // namespace h2oflex
