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
#include "experiments/common/job_config.h"
#include "experiments/common/model_source.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/run_config.h"
#include "experiments/generate/block_engine.h"
#include "experiments/generate/error_report.h"
#include "experiments/generate/generate_job.h"
#include "experiments/generate/generate_session.h"
#include "experiments/generate/job_record.h"
#include "experiments/generate/stage_blocks.h"
#include "experiments/generate/stop_signal.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "policy/yaml_fields.h"
#include "runtime/core/error.h"
#include "runtime/core/timer.h"
#include "runtime/dist/transport.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex {

namespace {

namespace fs = std::filesystem;

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

RunConfig load_generate_config(const GenerateJobOptions& options) {
  JobConfigSource source;
  source.command = "generate";
  source.config_path = options.config_path;
  source.model_dir = options.model_dir;
  source.overrides = options.overrides;
  return generate::load_generate_config(source);
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
  generate::GenerateSession session(std::move(config), "generate");
  const ModelSource& model = session.model();
  generate::BlockEngine& engine = session.engine();
  const double load_s = session.load_s();

  generate::JobSettings settings = session.job_settings(!options.no_grouping);
  settings.input_path = options.input;
  settings.output_path = options.output;
  settings.progress_terminal = ::isatty(STDERR_FILENO) == 1;
  settings.job_record = session.job_record(settings);

  generate::StopSignalGuard stop;
  settings.stop_requested = [&stop] { return stop.requested(); };
  Transport* stages = in_multi_process_job() ? job_transport() : nullptr;
  const generate::JobSummary s = generate::run_generate_job(
      settings, session.tokenizer(), [&engine, stages](const generate::BlockWork& w) {
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
