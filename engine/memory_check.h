// Refusing, before any allocation, a run without a policy that cannot fit in this machine's
// memory (instead of failing half-way with an allocation error).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/memory_plan.h"

namespace h2oflex {

// MemAvailable of this machine in bytes (0 when it cannot be read).
uint64_t available_memory_bytes();

// The longest of `prompts` (the padded length a batch computes with).
size_t longest_prompt(const std::vector<std::vector<int32_t>>& prompts);

// Throws InputError naming `what` and the estimate when the plan's bytes (everything is in RAM,
// or on the one GPU, for a run without a policy) exceed `host_budget` — or, with no budget (0),
// the memory this machine has available.
void check_in_ram_fits(const policy::MemoryPlan& plan, uint64_t host_budget,
                       const std::string& what);

}  // namespace h2oflex
