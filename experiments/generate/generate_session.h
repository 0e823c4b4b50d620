// What a generate job opens once and every block shares: the run config with generate's
// defaults, the model's tokenizer, the model, the engine, and the job settings they decide (block
// size, default sampling, stop ids, the model's context). `h2oflex generate` and the Python
// package's LLM both start from it, so a prompt gives the same text through either.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "experiments/common/job_config.h"
#include "experiments/common/model_source.h"
#include "experiments/generate/block_engine.h"
#include "experiments/generate/generate_job.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex::generate {

// The job's run config: `source`'s file or data, overrides and model, with generate's defaults
// for the keys it leaves out (stop at EOS, batch_size 16, gen_len 32).
RunConfig load_generate_config(JobConfigSource source);

class GenerateSession {
 public:
  // Loads the tokenizer, the model and the engine; InputError when the tokenizer and the model
  // disagree (vocabulary size, EOS). `command` names it in messages.
  GenerateSession(RunConfig config, const std::string& command);

  // Settings for a job over this session (no input or output paths): block size, grouping,
  // defaults from the config, seed, the model's context, the chat template's directory, and the
  // ids that end a completion.
  JobSettings job_settings(bool group_by_length) const;
  // The settings that decide the results (job_record.h), by the model's content.
  nlohmann::ordered_json job_record(const JobSettings& settings) const;

  const RunConfig& config() const { return config_; }
  const BpeTokenizer& tokenizer() const { return tokenizer_; }
  const ModelSource& model() const { return model_; }
  BlockEngine& engine() { return *engine_; }
  const BlockEngine& engine() const { return *engine_; }
  double load_s() const { return load_s_; }

 private:
  RunConfig config_;
  BpeTokenizer tokenizer_;
  ModelSource model_;
  std::unique_ptr<BlockEngine> engine_;
  double load_s_ = 0;
};

}  // namespace h2oflex::generate
