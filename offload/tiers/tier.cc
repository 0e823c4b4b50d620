#include "offload/tiers/tier.h"

#include "runtime/core/byte_size.h"

namespace h2oflex {

Tier::Tier(TierKind kind, std::string name, uint64_t budget, size_t alignment)
    : kind_(kind), name_(std::move(name)), budget_(budget), alignment_(alignment) {
  H2OFLEX_CHECK(alignment_ > 0 && (alignment_ & (alignment_ - 1)) == 0,
                "tier alignment must be a power of two, got ", alignment_);
}

uint64_t Tier::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

uint64_t Tier::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

void Tier::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = used_;
}

void Tier::charge(uint64_t bytes, std::string_view what) {
  std::lock_guard lock(mutex_);
  if (bytes > budget_ || used_ > budget_ - bytes) {
    throw TierBudgetError(detail::concat(
        "tier '", name_, "': cannot allocate ", describe_bytes(bytes), what.empty() ? "" : " for ",
        what, ": budget ", describe_bytes(budget_), ", in use ", describe_bytes(used_), ", free ",
        describe_bytes(budget_ - used_)));
  }
  used_ += bytes;
  if (used_ > peak_) peak_ = used_;
}

void Tier::discharge(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  H2OFLEX_CHECK(bytes <= used_, "tier '", name_, "' releases ", bytes, " bytes but only ", used_,
                " are in use");
  used_ -= bytes;
}

uint64_t Tier::round_up(uint64_t bytes) const {
  return (bytes + alignment_ - 1) / alignment_ * alignment_;
}

}  // namespace h2oflex
