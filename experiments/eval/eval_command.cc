#include "experiments/eval/eval_command.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "experiments/common/job_config.h"
#include "experiments/common/model_source.h"
#include "experiments/common/output_paths.h"
#include "experiments/eval/choice_tasks.h"
#include "experiments/eval/eval_setup.h"
#include "experiments/eval/perplexity.h"
#include "experiments/generate/block_engine.h"
#include "experiments/generate/error_report.h"
#include "runtime/core/error.h"
#include "runtime/core/timer.h"

namespace h2oflex {

namespace {

namespace fs = std::filesystem;

// The config of a single eval command: the file, --set, --model, then eval's defaults.
RunConfig eval_config(const EvalOptions& o, const std::string& command) {
  std::vector<std::pair<std::string, std::string>> unused = job_unused_keys();
  for (const char* key : {"gen_len", "temperature", "top_p", "stop_at_eos"}) {
    unused.emplace_back(key, "eval scores given tokens, it generates none");
  }
  JobConfigSource source;
  source.command = command;
  source.config_path = o.config_path;
  source.model_dir = o.model_dir;
  source.overrides = o.overrides;
  source.unused_keys = unused;
  return load_job_config(source, eval::apply_eval_defaults);
}

// What an eval reads: its --text or --tasks, --config, and what the run config names.
std::vector<NamedPath> eval_inputs(const EvalOptions& o, const char* input_flag,
                                   const RunConfig& config) {
  std::vector<NamedPath> inputs{{input_flag, o.input}, {"--config", o.config_path}};
  for (NamedPath& in : run_config_inputs(config)) inputs.push_back(std::move(in));
  return inputs;
}

void check_input_file(const std::string& path, const char* flag) {
  H2OFLEX_INPUT_CHECK(!path.empty(), "eval needs ", flag, " FILE");
  H2OFLEX_INPUT_CHECK(fs::is_regular_file(path), flag, " '", path,
                      "' does not exist or is not a file");
}

// The policy as the results name it, with the budget of the longest scored sequence.
nlohmann::ordered_json kv_json(const policy::KvPolicy& kv, const std::vector<KvRule>& rules,
                               size_t longest) {
  nlohmann::ordered_json j;
  j["policy"] = kv.policy;
  j["summary"] = kv.summary();
  j["ratios_of"] = "the scored sequence (BOS included)";
  j["eviction"] = kv.resolve(2, 0).prefill_only ? "once, at the prefill" : "token by token";
  const KvRule* rule = nullptr;
  for (const KvRule& r : rules) {
    if (rule == nullptr || r.capacity(1, 0) > rule->capacity(1, 0)) rule = &r;
  }
  if (rule != nullptr && rule->evicts()) {
    j["sinks"] = rule->sinks;
    j["heavy"] = rule->heavy;
    j["recent"] = rule->recent;
    j["budget"] = rule->sinks + rule->heavy + rule->recent;
  } else {
    j["budget"] = longest;  // the whole sequence is kept
  }
  j["sequence_tokens"] = longest;
  return j;
}

// The keys both result documents open with.
nlohmann::ordered_json result_head(const char* mode, const eval::EvalSetup& s,
                                   const char* input_key, const EvalOptions& o) {
  nlohmann::ordered_json j;
  j["mode"] = mode;
  j["model"] = s.source.description;
  j[input_key] = o.input;
  j["engine"] = s.engine->describe();
  j["context"] = o.context;
  return j;
}

// Bytes of the input the vocabulary has no token for: scored as if absent (as Hugging Face
// tokenizes them), and said so.
std::string dropped_note(size_t dropped_bytes) {
  return dropped_bytes == 0 ? "" : detail::concat("  dropped_bytes ", dropped_bytes);
}

void finish(const EvalOptions& o, const nlohmann::ordered_json& j) {
  if (!o.json_out.empty()) write_file_atomically(o.json_out, j.dump(2) + "\n");
}

}  // namespace

int run_eval_perplexity(const EvalOptions& o) {
  // Known wrong before the model is read: its context only bounds the window from above.
  eval::resolve_window_shape(o.window, o.stride, std::numeric_limits<int>::max(), "--window",
                             "--stride");
  check_input_file(o.input, "--text");
  RunConfig config = eval_config(o, "eval perplexity");
  check_output_paths(eval_inputs(o, "--text", config), {{"--json", o.json_out}});
  const std::string text = eval::read_text_file(o.input, "--text");
  H2OFLEX_INPUT_CHECK(!text.empty(), "--text '", o.input, "' is empty");
  eval::EvalSetup s(std::move(config), "eval perplexity");
  const eval::ContextReading reading = eval::context_reading(o.context, s.config.kv_policy);
  size_t dropped_bytes = 0;
  const std::vector<int32_t> tokens = s.tokenizer.encode(text, /*add_bos=*/false, &dropped_bytes);
  H2OFLEX_INPUT_CHECK(!tokens.empty(), "--text '", o.input, "' has no tokens");
  const eval::WindowShape shape = eval::resolve_window_shape(
      o.window, o.stride, s.source.model->max_positions(), "--window", "--stride");
  const int window = shape.window, stride = shape.stride;

  Stopwatch watch;
  const eval::PerplexityResult r =
      eval::text_perplexity(tokens, s.bos, window, stride, s.config.kv_policy, *s.engine, reading);
  const double eval_s = watch.elapsed();
  size_t longest = 0;
  for (const eval::Window& w : r.windows) longest = std::max(longest, w.end - w.begin + 1);
  std::printf("perplexity %.4f  nll_mean %.6f  tokens %zu  windows %zu%s  kv %s\n", r.perplexity,
              r.nll_mean, r.nll.size(), r.windows.size(), dropped_note(dropped_bytes).c_str(),
              s.config.kv_policy.summary().c_str());
  nlohmann::ordered_json j = result_head("perplexity", s, "text", o);
  j["perplexity"] = r.perplexity;
  j["nll_mean"] = r.nll_mean;
  j["tokens"] = r.nll.size();
  if (dropped_bytes > 0) j["dropped_bytes"] = dropped_bytes;
  j["window"] = window;
  j["stride"] = stride;
  j["windows"] = r.windows.size();
  j["kv"] = kv_json(s.config.kv_policy, r.rules, longest);
  j["eval_s"] = eval_s;
  j["nll"] = r.nll;
  finish(o, j);
  return 0;
}

int run_eval_choice(const EvalOptions& o) {
  check_input_file(o.input, "--tasks");
  // Without --json the report lies beside the tasks file.
  const std::string errors = generate::errors_path_for(o.json_out.empty() ? o.input : o.json_out);
  RunConfig config = eval_config(o, "eval choice");
  check_output_paths(eval_inputs(o, "--tasks", config),
                     {{"--json", o.json_out}, {"the error report", errors}});
  generate::check_error_report_replaceable(
      errors, o.json_out.empty() ? "name the result with --json OUT (the report is then "
                                   "OUT.errors.jsonl)"
                                 : "choose another --json");
  eval::ParsedTasks parsed = eval::read_choice_tasks(o.input);
  eval::EvalSetup s(std::move(config), "eval choice");
  const eval::ContextReading reading = eval::context_reading(o.context, s.config.kv_policy);
  // A task too long for the model, or whose choice adds no tokens, is a bad line like the rest.
  parsed.tasks = eval::scorable_tasks(std::move(parsed.tasks), s.tokenizer, s.bos,
                                      s.source.model->max_positions(), parsed.errors);
  std::stable_sort(
      parsed.errors.begin(), parsed.errors.end(),
      [](const generate::LineError& a, const generate::LineError& b) { return a.line < b.line; });
  for (const generate::LineError& e : parsed.errors) {
    std::fprintf(stderr, "eval choice: %s line %lld%s: %s\n", o.input.c_str(),
                 static_cast<long long>(e.line), e.id.empty() ? "" : (" (id " + e.id + ")").c_str(),
                 e.reason.c_str());
  }
  generate::write_error_report(errors, parsed.errors);
  if (parsed.errors.empty()) {
    H2OFLEX_INPUT_CHECK(!parsed.tasks.empty(), "--tasks '", o.input, "' holds no task");
  } else {
    H2OFLEX_INPUT_CHECK(!parsed.tasks.empty(), "--tasks '", o.input, "' holds no valid task (",
                        parsed.errors.size(), " bad line(s), reported in ", errors, ")");
    std::fprintf(stderr, "eval choice: %zu task line(s) skipped, reported in %s\n",
                 parsed.errors.size(), errors.c_str());
  }

  Stopwatch watch;
  const eval::ChoiceResult r = eval::score_choice_tasks(parsed.tasks, s.tokenizer, s.bos,
                                                        s.config.kv_policy, *s.engine, reading);
  const double eval_s = watch.elapsed();
  std::printf("acc %.4f  acc_norm %.4f  n %zu  skipped %zu%s  kv %s\n", r.acc, r.acc_norm,
              parsed.tasks.size(), parsed.errors.size(), dropped_note(r.dropped_bytes).c_str(),
              s.config.kv_policy.summary().c_str());
  for (const eval::GroupAccuracy& g : r.groups) {
    std::printf("  %s: acc %.4f  acc_norm %.4f  n %d\n", g.group.c_str(), g.acc, g.acc_norm, g.n);
  }
  nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
  for (size_t i = 0; i < parsed.tasks.size(); ++i) {
    const eval::TaskScore& t = r.scores[i];
    tasks.push_back({{"id", parsed.tasks[i].id},
                     {"answer", parsed.tasks[i].answer},
                     {"pred", t.pred},
                     {"pred_norm", t.pred_norm},
                     {"loglik", t.loglik},
                     {"tokens", t.tokens}});
  }
  nlohmann::ordered_json j = result_head("choice", s, "tasks_file", o);
  j["acc"] = r.acc;
  j["acc_norm"] = r.acc_norm;
  j["n"] = parsed.tasks.size();
  j["rejected"] = parsed.errors.size();
  if (r.dropped_bytes > 0) j["dropped_bytes"] = r.dropped_bytes;
  if (!r.groups.empty()) j["groups"] = eval::groups_json(r.groups);
  j["sequences"] = r.sequences;
  j["kv"] = kv_json(s.config.kv_policy, r.rules, r.longest);
  j["eval_s"] = eval_s;
  j["tasks"] = tasks;
  finish(o, j);
  return 0;
}

}  // namespace h2oflex
