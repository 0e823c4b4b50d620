#include "runtime/core/tier_kind.h"

#include "runtime/core/error.h"

namespace h2oflex {

std::string_view tier_kind_name(TierKind kind) {
  switch (kind) {
    case TierKind::Device:
      return "device";
    case TierKind::Host:
      return "host";
    case TierKind::Disk:
      return "disk";
  }
  return "unknown";
}

TierKind parse_tier_kind(std::string_view name) {
  if (name == "device") return TierKind::Device;
  if (name == "host") return TierKind::Host;
  if (name == "disk") return TierKind::Disk;
  throw InputError(detail::concat("unknown tier '", name, "' (expected device, host or disk)"));
}

}  // namespace h2oflex
