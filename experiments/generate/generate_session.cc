#include "experiments/generate/generate_session.h"

#include <algorithm>
#include <cstdio>

#include "runtime/core/error.h"
#include "runtime/core/timer.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex::generate {

namespace {

// Generate's defaults differ from `run`'s throughput defaults: stop at EOS, a useful batch.
constexpr int kDefaultBatchSize = 16;
constexpr int kDefaultMaxNewTokens = 32;

}  // namespace

RunConfig load_generate_config(JobConfigSource source) {
  source.unused_keys = job_unused_keys();
  return load_job_config(source, [](YAML::Node& root) {
    if (!root["stop_at_eos"]) root["stop_at_eos"] = true;
    if (!root["batch_size"]) root["batch_size"] = kDefaultBatchSize;
    if (!root["gen_len"]) root["gen_len"] = kDefaultMaxNewTokens;
  });
}

GenerateSession::GenerateSession(RunConfig config, const std::string& command)
    : config_(std::move(config)),
      tokenizer_(load_job_tokenizer(config_.model, command)),
      model_(open_model_source(config_.model, config_.dummy, config_.seed)) {
  Stopwatch load_watch;
  const DecoderModel& m = *model_.model;
  const SpecialTokens special = m.special_tokens();
  H2OFLEX_INPUT_CHECK(static_cast<int64_t>(tokenizer_.vocab_size()) <= m.vocab(), "model '",
                      config_.model, "': the tokenizer has ", tokenizer_.vocab_size(),
                      " ids but the model's vocabulary only ", m.vocab());
  // The model's EOS must be one the tokenizer ends on (Llama-3 instruct models name several
  // end ids; config.json's first need not be the tokenizer's eos_token).
  const std::vector<int32_t>& stops = tokenizer_.stop_ids();
  H2OFLEX_INPUT_CHECK(tokenizer_.eos_id() == special.eos ||
                          std::find(stops.begin(), stops.end(), special.eos) != stops.end(),
                      "model '", config_.model, "': the model's eos_token_id ", special.eos,
                      " is neither the tokenizer's EOS id (", tokenizer_.eos_id(),
                      ") nor one of its stop ids");
  std::fprintf(stderr, "%s: loading %s ...\n", command.c_str(), model_.description.c_str());
  engine_ = std::make_unique<BlockEngine>(config_, model_);
  load_s_ = load_watch.elapsed();
  std::fprintf(stderr, "%s: %s, loaded in %.2f s\n", command.c_str(), engine_->describe().c_str(),
               load_s_);
}

JobSettings GenerateSession::job_settings(bool group_by_length) const {
  JobSettings s;
  s.block_size = engine_->block_size();
  s.group_by_length = group_by_length;
  s.defaults.max_new_tokens = config_.gen_len;
  s.defaults.temperature = config_.temperature;
  s.defaults.top_p = config_.top_p;
  s.seed = config_.seed;
  s.max_positions = model_.model->max_positions();
  s.chat_template_dir = config_.model;  // a directory or GGUF file: load_job_tokenizer checked it
  // With stop_at_eos off the model runs past EOS, and EOS is kept as an ordinary token.
  s.stop_ids.clear();
  if (config_.stop_at_eos) {
    // The model's EOS and every other id its generation config names (Llama-3's end of turn).
    s.stop_ids = tokenizer_.stop_ids();
    const int32_t eos = model_.model->special_tokens().eos;
    if (std::find(s.stop_ids.begin(), s.stop_ids.end(), eos) == s.stop_ids.end()) {
      s.stop_ids.push_back(eos);
    }
  }
  return s;
}

nlohmann::ordered_json GenerateSession::job_record(const JobSettings& s) const {
  // The model by its content, not its path: weights changed in place must not resume a job, a
  // moved or copied directory may.
  nlohmann::ordered_json j;
  j["model"] = model_.content;
  j["dummy"] = model_.dummy;
  j["compute_device"] = pipeline_device_name(engine_->device());
  j["compute_dtype"] = std::string(ops::compute_type_name(engine_->compute_type()));
  j["block_size"] = s.block_size;
  j["grouping"] = s.group_by_length ? "length" : "none";
  j["gen_len"] = s.defaults.max_new_tokens;
  j["temperature"] = s.defaults.temperature;
  j["top_p"] = s.defaults.top_p;
  j["seed"] = s.seed;
  j["stop_at_eos"] = config_.stop_at_eos;
  j["kv"] = config_.kv_policy.summary();
  // Placement does not change the results; 4-bit compression does.
  j["compress_weight"] = engine_->policy() && engine_->policy()->compress_weight;
  j["compress_cache"] = engine_->policy() && engine_->policy()->compress_cache;
  return j;
}

}  // namespace h2oflex::generate
