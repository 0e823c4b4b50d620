// What every eval mode opens — the run config with eval's defaults, the tokenizer, the model and
// the engine — and the checks they share.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>

#include "experiments/common/model_source.h"
#include "experiments/common/run_config.h"
#include "experiments/eval/token_scorer.h"
#include "experiments/generate/block_engine.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex::eval {

// Eval's defaults for keys the config leaves out: f32 compute, so a quality figure does not
// depend on which type the machine computes fastest in; a block of 16 sequences.
void apply_eval_defaults(YAML::Node& root);

// The token every scored sequence starts with: the tokenizer's BOS, else the model's.
int32_t scoring_bos(const BpeTokenizer& tokenizer, const DecoderModel& model);

struct EvalSetup {
  RunConfig config;
  BpeTokenizer tokenizer;
  ModelSource source;
  std::unique_ptr<generate::BlockEngine> engine;
  int32_t bos = 0;  // every scored sequence starts with it

  // `command` names it in messages ("eval perplexity").
  EvalSetup(RunConfig config, const std::string& command);
};

// The names of the context readings, as --context and a suite's `context:` write them.
constexpr const char* kContextReadings = "stream, prefill or prefill-context";
bool is_context_reading(const std::string& context);

// `context` as --context writes it; InputError for another value, or for streaming a policy that
// selects only at a prefill (it would keep everything).
ContextReading context_reading(const std::string& context, const policy::KvPolicy& kv);

// The whole file; InputError naming `flag` when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& flag);

}  // namespace h2oflex::eval
