// Splits a job's requests into engine blocks. Every block shares one temperature / top_p (the
// engine samples a whole batch alike) and, with length grouping, holds prompts of similar length
// so little of each block is padding. The plan depends only on the input, so an interrupted job
// re-forms exactly the same blocks when it resumes.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/generate/prepared_request.h"

namespace h2oflex::generate {

struct GroupingOptions {
  int block_size = 1;
  bool by_length = true;         // false: input order within each sampling group
  int64_t max_positions = 2048;  // a block's longest prompt + largest gen_len must fit
};

struct JobBlock {
  std::vector<size_t> members;  // indices into the prepared requests
  int prompt_len = 0;           // longest prompt in the block (tokens)
  int gen_len = 0;              // largest max_new_tokens in the block
  float temperature = 0.0f;
  float top_p = 1.0f;
};

std::vector<JobBlock> plan_blocks(const std::vector<PreparedRequest>& requests,
                                  const GroupingOptions& options);

// Prompt tokens the blocks feed the engine, padding included, and without padding.
struct PlanCost {
  int64_t prompt_tokens = 0;
  int64_t padded_prompt_tokens = 0;
};
PlanCost plan_cost(const std::vector<JobBlock>& blocks,
                   const std::vector<PreparedRequest>& requests);

}  // namespace h2oflex::generate
