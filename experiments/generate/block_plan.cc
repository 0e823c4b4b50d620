#include "experiments/generate/block_plan.h"

#include <algorithm>
#include <map>
#include <utility>

#include "runtime/core/error.h"

namespace h2oflex::generate {

std::vector<JobBlock> plan_blocks(const std::vector<PreparedRequest>& requests,
                                  const GroupingOptions& options) {
  H2OFLEX_CHECK(options.block_size >= 1, "block size ", options.block_size);
  // Sampling groups in order of first appearance, so the plan follows the input.
  std::vector<std::pair<float, float>> group_keys;
  std::map<std::pair<float, float>, std::vector<size_t>> groups;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::pair<float, float> key{requests[i].temperature, requests[i].top_p};
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) group_keys.push_back(key);
    it->second.push_back(i);
  }

  std::vector<JobBlock> blocks;
  for (const auto& key : group_keys) {
    std::vector<size_t>& members = groups[key];
    if (options.by_length) {
      std::stable_sort(members.begin(), members.end(), [&](size_t a, size_t b) {
        const auto la = requests[a].prompt_ids.size(), lb = requests[b].prompt_ids.size();
        return la != lb ? la < lb : requests[a].max_new_tokens < requests[b].max_new_tokens;
      });
    }
    JobBlock block;
    auto flush = [&] {
      if (!block.members.empty()) blocks.push_back(std::move(block));
      block = JobBlock{};
    };
    for (size_t i : members) {
      const int len = static_cast<int>(requests[i].prompt_ids.size());
      const int gen = requests[i].max_new_tokens;
      const bool full = static_cast<int>(block.members.size()) == options.block_size;
      // Left padding puts every prompt at the block's longest length, so the longest prompt and
      // the largest gen_len of the block must fit the context together.
      const bool overflows =
          std::max(block.prompt_len, len) + std::max(block.gen_len, gen) > options.max_positions;
      if (full || (!block.members.empty() && overflows)) flush();
      block.members.push_back(i);
      block.prompt_len = std::max(block.prompt_len, len);
      block.gen_len = std::max(block.gen_len, gen);
      block.temperature = key.first;
      block.top_p = key.second;
    }
    flush();
  }
  return blocks;
}

PlanCost plan_cost(const std::vector<JobBlock>& blocks,
                   const std::vector<PreparedRequest>& requests) {
  PlanCost cost;
  for (const JobBlock& b : blocks) {
    for (size_t i : b.members) cost.prompt_tokens += requests[i].prompt_ids.size();
    cost.padded_prompt_tokens += static_cast<int64_t>(b.members.size()) * b.prompt_len;
  }
  return cost;
}

}  // namespace h2oflex::generate
