#include "experiments/generate/generate_command.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/pipeline_device.h"
#include "experiments/generate/block_engine.h"
#include "experiments/generate/error_report.h"
#include "experiments/generate/generate_job.h"
#include "experiments/generate/job_record.h"
#include "experiments/generate/stage_blocks.h"
#include "experiments/generate/stop_signal.h"
#include "experiments/job_config.h"
#include "experiments/model_source.h"
#include "experiments/output_paths.h"
#include "experiments/run_config.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "policy/yaml_fields.h"
#include "runtime/core/error.h"
#include "runtime/core/timer.h"
#include "runtime/dist/transport.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex {

namespace {

namespace fs = std::filesystem;

// Generate's defaults differ from `run`'s throughput defaults: stop at EOS, a useful batch.
constexpr int kDefaultBatchSize = 16;
constexpr int kDefaultMaxNewTokens = 32;

void check_paths(const GenerateJobOptions& o, const RunConfig& config) {
  H2OFLEX_INPUT_CHECK(!o.input.empty(), "generate needs --input IN.jsonl");
  H2OFLEX_INPUT_CHECK(!o.output.empty(), "generate needs --output OUT.jsonl");
  H2OFLEX_INPUT_CHECK(fs::is_regular_file(o.input) || fs::is_fifo(o.input), "input file '", o.input,
                      "' does not exist or is not a file");
  std::ifstream in(o.input);
  H2OFLEX_INPUT_CHECK(in.good(), "cannot read input file '", o.input, "': ", std::strerror(errno));
  const std::string errors = generate::errors_path_for(o.output);
  const std::string record = generate::job_record_path_for(o.output);
  std::vector<NamedPath> inputs{{"--input", o.input}, {"--config", o.config_path}};
  for (NamedPath& in : run_config_inputs(config)) inputs.push_back(std::move(in));
  check_output_paths(inputs, {{"--output", o.output},
                              {"the error report of --output", errors},
                              {"the job record of --output", record},
                              {"--json", o.summary_json}});
  generate::check_error_report_replaceable(errors);
  generate::read_job_record(record);  // refuses a file that is not a record (never overwritten)
}

bool has_content(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && fs::file_size(path, ec) > 0;
}

// `compute_dtype: auto` is measured on each start and can come out differently on a near tie;
// a resumed job computes in the type it started with, so its results are all of one kind.
void adopt_recorded_compute_type(const std::string& output, RunConfig& config) {
  if (config.compute_dtype != "auto" || !has_content(output)) return;
  const std::string path = generate::job_record_path_for(output);
  const auto recorded = generate::read_job_record(path);
  if (!recorded || !recorded->contains("compute_dtype")) return;
  const nlohmann::ordered_json& type = (*recorded)["compute_dtype"];
  H2OFLEX_INPUT_CHECK(type.is_string(), "job record '", path, "': compute_dtype is ", type.dump(),
                      ", not a type name");
  ops::parse_compute_dtype(type.get<std::string>(), path + ": compute_dtype");
  config.compute_dtype = type.get<std::string>();
  std::fprintf(stderr, "generate: compute_dtype auto is %s, the type this job started with (%s)\n",
               config.compute_dtype.c_str(), path.c_str());
}

// The settings that decide the results (job_record.h). The model by its content, not its path:
// weights changed in place must not resume a job, a moved or copied directory may.
nlohmann::ordered_json job_settings(const RunConfig& config, const ModelSource& model,
                                    const generate::BlockEngine& engine,
                                    const generate::JobSettings& s) {
  nlohmann::ordered_json j;
  j["model"] = model.content;
  j["dummy"] = model.dummy;
  j["compute_device"] = pipeline_device_name(engine.device());
  j["compute_dtype"] = std::string(ops::compute_type_name(engine.compute_type()));
  j["block_size"] = s.block_size;
  j["grouping"] = s.group_by_length ? "length" : "none";
  j["gen_len"] = s.defaults.max_new_tokens;
  j["temperature"] = s.defaults.temperature;
  j["top_p"] = s.defaults.top_p;
  j["seed"] = s.seed;
  j["stop_at_eos"] = config.stop_at_eos;
  j["kv"] = config.kv_policy.summary();
  // Placement does not change the results; 4-bit compression does.
  j["compress_weight"] = engine.policy() && engine.policy()->compress_weight;
  j["compress_cache"] = engine.policy() && engine.policy()->compress_cache;
  return j;
}

RunConfig load_generate_config(const GenerateJobOptions& options) {
  return load_job_config(
      {"generate", options.config_path, options.model_dir, options.overrides, job_unused_keys()},
      [](YAML::Node& root) {
        if (!root["stop_at_eos"]) root["stop_at_eos"] = true;
        if (!root["batch_size"]) root["batch_size"] = kDefaultBatchSize;
        if (!root["gen_len"]) root["gen_len"] = kDefaultMaxNewTokens;
      });
}

// A rank other than 0 of `mpirun -np S h2oflex generate`: its stage of every block rank 0 runs
// (stage_blocks.h). It reads no input and writes no output. mpirun passes SIGINT / SIGTERM to
// every rank: this one waits for rank 0, which ends the job after the block in flight.
int follow_generate_job(const GenerateJobOptions& options) {
  RunConfig config = load_generate_config(options);
  check_run_paths(config);
  const ModelSource model = open_model_source(config.model, config.dummy, config.seed);
  generate::BlockEngine engine(config, model);
  const generate::StopSignalGuard stop;
  generate::follow_blocks(*job_transport(),
                          [&engine](const generate::BlockWork& w) { return engine.run(w); });
  return 0;
}

}  // namespace

int run_generate(const GenerateJobOptions& options) {
  if (!speaks_for_job()) return follow_generate_job(options);
  RunConfig config = load_generate_config(options);
  check_paths(options, config);
  check_run_paths(config);
  adopt_recorded_compute_type(options.output, config);
  const BpeTokenizer tokenizer = load_job_tokenizer(config.model, "generate");

  Stopwatch load_watch;
  const ModelSource model = open_model_source(config.model, config.dummy, config.seed);
  const DecoderModel& m = *model.model;
  const SpecialTokens special = m.special_tokens();
  H2OFLEX_INPUT_CHECK(static_cast<int64_t>(tokenizer.vocab_size()) <= m.vocab(), "model '",
                      config.model, "': the tokenizer has ", tokenizer.vocab_size(),
                      " ids but the model's vocabulary only ", m.vocab());
  // The model's EOS must be one the tokenizer ends on (Llama-3 instruct models name several
  // end ids; config.json's first need not be the tokenizer's eos_token).
  const std::vector<int32_t>& stops = tokenizer.stop_ids();
  H2OFLEX_INPUT_CHECK(tokenizer.eos_id() == special.eos ||
                          std::find(stops.begin(), stops.end(), special.eos) != stops.end(),
                      "model '", config.model, "': the model's eos_token_id ", special.eos,
                      " is neither the tokenizer's EOS id (", tokenizer.eos_id(),
                      ") nor one of its stop ids");
  std::fprintf(stderr, "generate: loading %s ...\n", model.description.c_str());
  generate::BlockEngine engine(config, model);
  const double load_s = load_watch.elapsed();
  std::fprintf(stderr, "generate: %s, loaded in %.2f s\n", engine.describe().c_str(), load_s);

  generate::JobSettings settings;
  settings.input_path = options.input;
  settings.output_path = options.output;
  settings.block_size = engine.block_size();
  settings.group_by_length = !options.no_grouping;
  settings.defaults.max_new_tokens = config.gen_len;
  settings.defaults.temperature = config.temperature;
  settings.defaults.top_p = config.top_p;
  settings.seed = config.seed;
  settings.max_positions = m.max_positions();
  settings.chat_template_dir =
      config.model;  // a directory or GGUF file: load_job_tokenizer checked it
  // With stop_at_eos off the model runs past EOS, and EOS is kept as an ordinary token.
  settings.stop_ids.clear();
  if (config.stop_at_eos) {
    // The model's EOS and every other id its generation config names (Llama-3's end of turn).
    settings.stop_ids = tokenizer.stop_ids();
    if (std::find(settings.stop_ids.begin(), settings.stop_ids.end(), special.eos) ==
        settings.stop_ids.end()) {
      settings.stop_ids.push_back(special.eos);
    }
  }
  settings.progress_terminal = ::isatty(STDERR_FILENO) == 1;
  settings.job_record = job_settings(config, model, engine, settings);

  generate::StopSignalGuard stop;
  settings.stop_requested = [&stop] { return stop.requested(); };
  Transport* stages = in_multi_process_job() ? job_transport() : nullptr;
  const generate::JobSummary s = generate::run_generate_job(
      settings, tokenizer, [&engine, stages](const generate::BlockWork& w) {
        if (stages != nullptr) generate::share_block(*stages, w);
        return engine.run(w);
      });
  if (stages != nullptr) generate::share_end(*stages);

  const double tok_s = s.generate_s > 0 ? s.completion_tokens / s.generate_s : 0.0;
  std::fprintf(stderr,
               "generate: wrote %lld results (%lld tokens, %.1f tok/s over %.2f s); %lld of %lld "
               "requests done, %lld rejected\n",
               static_cast<long long>(s.completed), static_cast<long long>(s.completion_tokens),
               tok_s, s.generate_s, static_cast<long long>(s.already_done + s.completed),
               static_cast<long long>(s.requests), static_cast<long long>(s.errors));
  if (s.interrupted) {
    std::fprintf(stderr,
                 "generate: stopped by signal %d after finishing the block in flight; run the "
                 "same command again to resume\n",
                 stop.signal_number());
  }
  if (!options.summary_json.empty()) {
    nlohmann::ordered_json j;
    j["model"] = model.description;
    j["engine"] = engine.describe();
    j["block_size"] = settings.block_size;
    j["grouping"] = settings.group_by_length ? "length" : "none";
    j["requests"] = s.requests;
    j["rejected"] = s.errors;
    j["already_done"] = s.already_done;
    j["completed"] = s.completed;
    j["interrupted"] = s.interrupted;
    j["blocks_run"] = s.blocks_run;
    j["completion_tokens"] = s.completion_tokens;
    j["generate_s"] = s.generate_s;
    j["tokens_per_s"] = tok_s;
    j["load_s"] = load_s;
    j["plan_prompt_tokens"] = s.cost.prompt_tokens;
    j["plan_padded_prompt_tokens"] = s.cost.padded_prompt_tokens;
    write_file_atomically(options.summary_json, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace h2oflex
