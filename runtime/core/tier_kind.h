// The three kinds of memory tier (compute device, host RAM, disk). A ground-floor fact: the
// placement policy, the memory plan and the tiers themselves all speak of it.
#pragma once

#include <cstdint>
#include <string_view>

namespace h2oflex {

enum class TierKind : uint8_t { Device, Host, Disk };
inline constexpr int kTierKinds = 3;

// "device", "host", "disk".
std::string_view tier_kind_name(TierKind kind);
// Inverse of tier_kind_name; throws InputError naming the text.
TierKind parse_tier_kind(std::string_view name);

}  // namespace h2oflex
