// Home tier of each weight tensor from per-tier percentages (FlexGen's rule).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/core/tier_kind.h"

namespace h2oflex {

// Percentages of the weight bytes per tier; they must sum to 100.
struct TierShares {
  double device = 0;
  double host = 0;
  double disk = 100;
};

// Walks tensors in order; a tensor goes to the tier whose cumulative share range contains the
// midpoint of the tensor's byte range (device first, then host, then disk). Each tier's bytes
// then differ from its share by at most one tensor's size. Call it once for the whole model, or
// once per layer so every layer gets the same split. Throws InputError on bad shares.
std::vector<TierKind> assign_home_tiers(std::span<const uint64_t> sizes, const TierShares& shares);

}  // namespace h2oflex
