#include "experiments/generate/block_loop.h"

#include <algorithm>

#include "runtime/core/error.h"
#include "runtime/core/timer.h"

namespace h2oflex::generate {

BlockLoopSummary run_blocks(const std::vector<JobBlock>& blocks,
                            const std::vector<PreparedRequest>& prepared,
                            const std::vector<GenerateRequest>& requests, const BlockLoop& loop,
                            const BpeTokenizer& tokenizer, const BlockRunner& run_block) {
  BlockLoopSummary summary;
  auto done = [&](size_t p) { return loop.done && loop.done(p); };
  Stopwatch watch;
  for (const JobBlock& block : blocks) {
    if (loop.stop_requested && loop.stop_requested()) {
      summary.interrupted = true;
      break;
    }
    if (std::all_of(block.members.begin(), block.members.end(), done)) continue;
    BlockWork work;
    for (size_t p : block.members) {
      work.prompts.push_back(prepared[p].prompt_ids);
      const GenerateRequest& request = requests[prepared[p].index];
      work.row_keys.push_back(request.seed ? seeded_sampling_key(*request.seed)
                                           : request_sampling_key(request.id));
      work.logit_bias.push_back(request.logit_bias);
      work.presence_penalty.push_back(request.presence_penalty.value_or(0.0f));
    }
    // Without any bias the engine's logits are used as they are (no host copy per step).
    if (std::all_of(work.logit_bias.begin(), work.logit_bias.end(),
                    [](const auto& b) { return b.empty(); })) {
      work.logit_bias.clear();
    }
    if (std::all_of(work.presence_penalty.begin(), work.presence_penalty.end(),
                    [](float p) { return p == 0.0f; })) {
      work.presence_penalty.clear();
    }
    work.prompt_len = block.prompt_len;
    work.gen_len = block.gen_len;
    work.temperature = block.temperature;
    work.top_p = block.top_p;
    work.seed = loop.seed;
    const std::vector<std::vector<int32_t>> tokens = run_block(work);
    H2OFLEX_CHECK(tokens.size() == block.members.size(), "block runner returned ", tokens.size(),
                  " sequences for ", block.members.size(), " prompts");

    std::vector<FinishedRequest> finished;
    for (size_t m = 0; m < block.members.size(); ++m) {
      const size_t p = block.members[m];
      if (done(p)) continue;
      const GenerateRequest& request = requests[prepared[p].index];
      FinishedRequest f;
      f.prepared = p;
      f.completion = finish_completion(tokenizer, tokens[m], prepared[p].max_new_tokens,
                                       loop.stop_ids, request.stop);
      f.token_ids.assign(
          tokens[m].begin(),
          tokens[m].begin() + std::min<size_t>(tokens[m].size(), f.completion.completion_tokens));
      summary.completion_tokens += f.completion.completion_tokens;
      finished.push_back(std::move(f));
    }
    ++summary.blocks_run;
    summary.completed += static_cast<int64_t>(finished.size());
    if (loop.on_block) loop.on_block(finished);
  }
  summary.generate_s = watch.elapsed();
  return summary;
}

}  // namespace h2oflex::generate
