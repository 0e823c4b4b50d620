// Generation in memory: requests given as values (the Python package's prompts), results
// returned in request order — the same preparation, block plan and block loop as a generate job
// over a file, so the same requests give the same texts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/generate/block_loop.h"
#include "experiments/generate/generate_session.h"
#include "experiments/generate/request_line.h"

namespace h2oflex::generate {

struct RequestResult {
  std::string id;
  std::string text;
  std::vector<int32_t> token_ids;
  int64_t prompt_tokens = 0;
  int64_t prompt_dropped_bytes = 0;  // bytes of the prompt the vocabulary cannot spell
  int64_t completion_tokens = 0;
  std::string finish_reason;  // "stop" or "length"; "" when the run stopped before it
};

struct GenerateRun {
  std::vector<RequestResult> results;  // in request order
  BlockLoopSummary summary;
  PlanCost cost;
  int block_size = 0;
};

struct GenerateCallbacks {
  std::function<bool()> stop_requested;  // checked between blocks
  // After each block: requests finished so far, of `total`, and their completion tokens.
  std::function<void(int64_t finished, int64_t total, int64_t completion_tokens)> progress;
};

// Every request must be valid and fit the model: the first that does not is an InputError
// naming its index and id, before any block runs. Ids must be distinct (they key the sampling
// streams and the results).
GenerateRun generate_requests(GenerateSession& session,
                              const std::vector<GenerateRequest>& requests, bool group_by_length,
                              const GenerateCallbacks& callbacks);

}  // namespace h2oflex::generate
