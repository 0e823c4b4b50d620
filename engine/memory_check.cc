#include "engine/memory_check.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"

namespace h2oflex {

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

size_t longest_prompt(const std::vector<std::vector<int32_t>>& prompts) {
  size_t n = 0;
  for (const auto& p : prompts) n = std::max(n, p.size());
  return n;
}

void check_in_ram_fits(const policy::MemoryPlan& plan, uint64_t host_budget,
                       const std::string& what) {
  // Without a policy every tier of the plan is memory the run holds at once.
  const uint64_t needed =
      plan.on(TierKind::Device) + plan.on(TierKind::Host) + plan.on(TierKind::Disk);
  const uint64_t limit = host_budget != 0 ? host_budget : available_memory_bytes();
  if (limit == 0 || needed <= limit) return;
  throw InputError(
      detail::concat(what, ": without a policy the run needs an estimated ",
                     format_bytes(static_cast<double>(needed)), " of memory, but ",
                     host_budget != 0 ? "hardware.host_mem is " : "this machine has ",
                     format_bytes(static_cast<double>(limit)), host_budget != 0 ? "" : " available",
                     ": lower batch_size, or add a policy: section that offloads to disk"));
}

}  // namespace h2oflex
