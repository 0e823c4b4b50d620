#include "experiments/generate/generate_cli.h"

namespace h2oflex {

CLI::App* add_generate_subcommand(CLI::App& app, GenerateJobOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "offline batch generation: JSONL prompts in, JSONL completions out; resumable (rerun the "
      "same command after an interruption)");
  cmd->add_option("--model", options.model_dir,
                  "model directory (config.json, safetensors, tokenizer files) or GGUF file; "
                  "replaces the config's model");
  cmd->add_option("--input", options.input,
                  "requests, one JSON per line: {id, prompt, max_new_tokens?, temperature?, "
                  "top_p?, stop?} or OpenAI batch lines {custom_id, body: {prompt, max_tokens?, "
                  "...}}; chat requests have messages: [{role, content}, ...] in place of "
                  "prompt (url /v1/chat/completions), rendered with the model's chat template")
      ->required();
  cmd->add_option("--output", options.output,
                  "results, one JSON per line (appended; finished ids are skipped); bad input "
                  "lines go to OUT.errors.jsonl; the job's settings to OUT.job.json (a resume "
                  "with other settings is refused)")
      ->required();
  cmd->add_option("--config", options.config_path,
                  "run configuration (YAML) as for `run`: policy, kv, compute_dtype, seed, "
                  "batch_size, gen_len (default max_new_tokens), temperature, top_p");
  cmd->add_option("--set", options.overrides, "override a config key: key=value (repeatable)");
  cmd->add_flag("--no-grouping", options.no_grouping,
                "form blocks in input order instead of grouping prompts by length");
  cmd->add_option("--json", options.summary_json, "write a summary document here");
  return cmd;
}

}  // namespace h2oflex
