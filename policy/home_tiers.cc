#include "policy/home_tiers.h"

#include <cmath>
#include <utility>

#include "runtime/core/error.h"

namespace h2oflex {

std::vector<TierKind> assign_home_tiers(std::span<const uint64_t> sizes, const TierShares& shares) {
  H2OFLEX_INPUT_CHECK(shares.device >= 0 && shares.host >= 0 && shares.disk >= 0,
                      "weight percentages must not be negative (device ", shares.device, ", host ",
                      shares.host, ", disk ", shares.disk, ")");
  const double sum = shares.device + shares.host + shares.disk;
  H2OFLEX_INPUT_CHECK(std::fabs(sum - 100.0) < 1e-6, "weight percentages must sum to 100, got ",
                      sum, " (device ", shares.device, ", host ", shares.host, ", disk ",
                      shares.disk, ")");
  long double total = 0;
  for (uint64_t s : sizes) total += s;
  const long double device_end = shares.device / 100.0L;
  const long double host_end = (shares.device + shares.host) / 100.0L;
  // Everything on one tier (the common case when a planner tries thousands of policies): no
  // midpoints to compute.
  for (const auto& [share, kind] :
       {std::pair{shares.device, TierKind::Device}, std::pair{shares.host, TierKind::Host},
        std::pair{shares.disk, TierKind::Disk}}) {
    if (share == 100.0) return std::vector<TierKind>(sizes.size(), kind);
  }
  std::vector<TierKind> homes;
  homes.reserve(sizes.size());
  long double before = 0;
  for (uint64_t s : sizes) {
    const long double mid = total > 0 ? (before + s / 2.0L) / total : 0;
    before += s;
    if (mid < device_end) {
      homes.push_back(TierKind::Device);
    } else if (mid < host_end) {
      homes.push_back(TierKind::Host);
    } else {
      homes.push_back(TierKind::Disk);
    }
  }
  return homes;
}

}  // namespace h2oflex
