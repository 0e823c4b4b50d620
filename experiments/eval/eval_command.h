// `h2oflex eval perplexity --model DIR --text FILE [--window W] [--stride S]` and
// `h2oflex eval choice --model DIR --tasks FILE.jsonl`, each with [--config RUN.yaml]
// [--set key=value]... [--json OUT]: what a KV policy costs in quality, with the policy applied
// for real (an evicted entry is gone) in any placement `run` supports.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace h2oflex {

struct EvalOptions {
  std::string model_dir;    // --model (replaces the config's model)
  std::string input;        // --text FILE (perplexity) or --tasks FILE.jsonl (choice)
  std::string config_path;  // --config RUN.yaml: policy, hardware, kv, compute_dtype, batch_size
  std::vector<std::string> overrides;  // --set key=value
  std::string json_out;                // --json OUT ("" = none)
  std::string context = "stream";      // --context: stream (token by token) | prefill
  std::optional<int> window;           // perplexity: absent = the model's context less the BOS
  std::optional<int> stride;           // perplexity: absent = the window
};

// Exit codes as elsewhere: 0, 2 for bad input (no result written), 1 other failures (thrown).
int run_eval_perplexity(const EvalOptions& options);
int run_eval_choice(const EvalOptions& options);

}  // namespace h2oflex
