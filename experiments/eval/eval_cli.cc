#include "experiments/eval/eval_cli.h"

#include "experiments/eval/quality_suite.h"

namespace h2oflex {

namespace {

void add_common(CLI::App* cmd, EvalOptions& o) {
  cmd->add_option("--model", o.model_dir,
                  "model directory (config.json, safetensors, tokenizer files) or GGUF file; "
                  "replaces the config's model");
  cmd->add_option("--config", o.config_path,
                  "run configuration (YAML) as for `run`: policy (placements), hardware, kv, "
                  "compute_dtype (default f32), batch_size (default 16)");
  cmd->add_option("--set", o.overrides,
                  "override a config key: key=value (repeatable), e.g. "
                  "--set 'kv={policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1}'");
  cmd->add_option("--json", o.json_out, "write the result document here");
  cmd->add_option("--context", o.context,
                  "how the unscored context is read: stream (token by token from the BOS, the "
                  "policy acting at every step; default), prefill (one prompt, the policy "
                  "selecting at its end; needed by snapkv) or prefill-context (choice tasks: "
                  "the context one prompt, a task's question then token by token)");
}

}  // namespace

int EvalCli::run(const EvalOptions& options) const {
  if (perplexity->parsed()) return run_eval_perplexity(options);
  if (choice->parsed()) return run_eval_choice(options);
  if (suite->parsed()) return eval::run_quality_suite(suite_path, suite_out, suite_model);
  return -1;
}

void add_eval_subcommand(CLI::App& app, EvalOptions& o, EvalCli& cli) {
  CLI::App* eval = app.add_subcommand(
      "eval", "what a KV policy costs in quality: perplexity of a text, multiple-choice accuracy");
  eval->require_subcommand(1);
  cli.perplexity = eval->add_subcommand(
      "perplexity",
      "stream a text through the model with the KV policy evicting token by token; per-token "
      "negative log-likelihood and perplexity");
  cli.perplexity->add_option("--text", o.input, "the text (UTF-8)")->required();
  cli.perplexity->add_option("--window", o.window,
                             "text tokens per window (default: the model's context less the BOS)");
  cli.perplexity->add_option("--stride", o.stride,
                             "tokens between window starts (default: the window); a window scores "
                             "only the tokens the previous one did not reach");
  add_common(cli.perplexity, o);
  cli.choice = eval->add_subcommand(
      "choice",
      "multiple-choice log-likelihood scoring (lm-eval-harness's convention): acc and acc_norm");
  cli.choice
      ->add_option("--tasks", o.input,
                   "one JSON per line: {\"id\", \"context\", \"choices\": [...], "
                   "\"answer\": i}; bad lines go to OUT.errors.jsonl")
      ->required();
  add_common(cli.choice, o);
  cli.suite = eval->add_subcommand(
      "suite", "the quality table: every policy at every budget on every task of a suite");
  cli.suite->add_option("suite", cli.suite_path, "quality suite YAML")->required();
  cli.suite->add_option("--out", cli.suite_out, "output directory")->required();
  cli.suite->add_option("--model", cli.suite_model,
                        "model directory; replaces the suite's model (required when the suite "
                        "names none)");
}

}  // namespace h2oflex
