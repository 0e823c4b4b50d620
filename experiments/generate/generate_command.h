// `h2oflex generate --model DIR --input IN.jsonl --output OUT.jsonl [--config RUN.yaml]
//  [--set key=value]... [--no-grouping] [--json SUMMARY.json]`: an offline batch job.
#pragma once

#include <string>
#include <vector>

namespace h2oflex {

struct GenerateJobOptions {
  std::string model_dir;    // --model: a model directory holding the tokenizer files; replaces
                            // the config's `model:` (which is used when this is empty)
  std::string input;        // --input IN.jsonl
  std::string output;       // --output OUT.jsonl (appended to; OUT.errors.jsonl beside it)
  std::string config_path;  // --config RUN.yaml ("" = defaults: in RAM, batch_size 16)
  std::vector<std::string> overrides;  // --set key=value, applied over the config
  bool no_grouping = false;            // --no-grouping: blocks in input order
  std::string summary_json;            // --json SUMMARY.json ("" = none)
};

// Runs (or resumes) the job. Returns 0 when it finished or stopped cleanly on SIGINT / SIGTERM.
// Bad options, a missing input or model: InputError before any generation starts.
int run_generate(const GenerateJobOptions& options);

}  // namespace h2oflex
