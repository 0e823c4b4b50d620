#include "experiments/generate/generate_requests.h"

#include <unordered_map>

#include "experiments/generate/block_plan.h"
#include "experiments/generate/prepared_request.h"
#include "runtime/core/error.h"

namespace h2oflex::generate {

GenerateRun generate_requests(GenerateSession& session,
                              const std::vector<GenerateRequest>& requests, bool group_by_length,
                              const GenerateCallbacks& callbacks) {
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto [it, added] = seen.emplace(requests[i].id, i);
    H2OFLEX_INPUT_CHECK(added, "request ", i, ": id '", requests[i].id, "' is already request ",
                        it->second, "'s");
  }
  const JobSettings settings = session.job_settings(group_by_length);
  const auto chat = chat_template_for(requests, settings.chat_template_dir);
  std::vector<LineError> errors;
  const std::vector<PreparedRequest> prepared =
      prepare_requests(requests, session.tokenizer(), chat ? &*chat : nullptr, settings.defaults,
                       settings.max_positions, errors);
  if (!errors.empty()) {
    const LineError& e = errors.front();
    H2OFLEX_INPUT_CHECK(false, "request ", e.line - 1, e.id.empty() ? "" : " (id '" + e.id + "')",
                        ": ", e.reason);
  }
  GroupingOptions grouping;
  grouping.block_size = settings.block_size;
  grouping.by_length = settings.group_by_length;
  grouping.max_positions = settings.max_positions;
  const std::vector<JobBlock> blocks = plan_blocks(prepared, grouping);

  GenerateRun run;
  run.block_size = settings.block_size;
  run.cost = plan_cost(blocks, prepared);
  run.results.resize(requests.size());
  for (const PreparedRequest& p : prepared) {
    RequestResult& r = run.results[p.index];
    r.id = requests[p.index].id;
    r.prompt_tokens = static_cast<int64_t>(p.prompt_ids.size());
    r.prompt_dropped_bytes = static_cast<int64_t>(p.dropped_bytes);
  }
  BlockLoop loop;
  loop.seed = settings.seed;
  loop.stop_ids = settings.stop_ids;
  loop.stop_requested = callbacks.stop_requested;
  int64_t finished = 0, tokens = 0;
  loop.on_block = [&](const std::vector<FinishedRequest>& done) {
    for (const FinishedRequest& f : done) {
      RequestResult& r = run.results[prepared[f.prepared].index];
      r.text = f.completion.text;
      r.token_ids = f.token_ids;
      r.completion_tokens = f.completion.completion_tokens;
      r.finish_reason = f.completion.finish_reason;
      ++finished;
      tokens += f.completion.completion_tokens;
    }
    if (callbacks.progress)
      callbacks.progress(finished, static_cast<int64_t>(requests.size()), tokens);
  };
  BlockEngine& engine = session.engine();
  run.summary = run_blocks(blocks, prepared, requests, loop, session.tokenizer(),
                           [&engine](const BlockWork& w) { return engine.run(w); });
  return run;
}

}  // namespace h2oflex::generate
