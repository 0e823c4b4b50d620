// The block loop every generate job runs, whatever keeps its results: each planned block's
// prompts, sampling streams and per-request settings handed to the engine, and each request's
// generated ids turned into its completion — `h2oflex generate` appends them to its result file,
// the Python package returns them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "experiments/generate/block_plan.h"
#include "experiments/generate/completion.h"
#include "experiments/generate/generate_job.h"
#include "experiments/generate/prepared_request.h"
#include "experiments/generate/request_line.h"

namespace h2oflex::generate {

struct FinishedRequest {
  size_t prepared = 0;  // index into the prepared requests
  Completion completion;
  std::vector<int32_t> token_ids;  // the completion's tokens (EOS or the stop token included)
};

struct BlockLoopSummary {
  int64_t blocks_run = 0;
  int64_t completed = 0;
  int64_t completion_tokens = 0;
  bool interrupted = false;  // stop_requested said so between blocks
  double generate_s = 0;     // wall time of the loop
};

struct BlockLoop {
  uint64_t seed = 1;                     // the job's sampling seed
  std::vector<int32_t> stop_ids;         // ids that end a completion
  std::function<bool()> stop_requested;  // checked before each block (may be empty)
  // A request already done (an earlier run's result): its block still runs when others of it
  // are pending — the same batch gives the same results — but it is not finished again.
  std::function<bool(size_t prepared)> done;
  // Called after each block with the requests it finished, in block order.
  std::function<void(const std::vector<FinishedRequest>&)> on_block;
};

BlockLoopSummary run_blocks(const std::vector<JobBlock>& blocks,
                            const std::vector<PreparedRequest>& prepared,
                            const std::vector<GenerateRequest>& requests, const BlockLoop& loop,
                            const BpeTokenizer& tokenizer, const BlockRunner& run_block);

}  // namespace h2oflex::generate
