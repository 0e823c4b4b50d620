#include "experiments/eval/eval_setup.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "experiments/common/job_config.h"
#include "runtime/core/error.h"

namespace h2oflex::eval {

int32_t scoring_bos(const BpeTokenizer& tokenizer, const DecoderModel& model) {
  // The token the tokenizer puts first, or the model's BOS (GPT-NeoX tokenizers prepend
  // nothing; lm-eval-harness then starts from end-of-text).
  return tokenizer.bos_to_prepend().value_or(model.special_tokens().bos);
}

void apply_eval_defaults(YAML::Node& root) {
  if (!root["compute_dtype"]) root["compute_dtype"] = "f32";
  if (!root["batch_size"]) root["batch_size"] = 16;
}

EvalSetup::EvalSetup(RunConfig c, const std::string& command)
    : config(std::move(c)),
      tokenizer((check_run_paths(config), load_job_tokenizer(config.model, command))),
      source(open_model_source(config.model, config.dummy, config.seed)) {
  const DecoderModel& m = *source.model;
  H2OFLEX_INPUT_CHECK(static_cast<int64_t>(tokenizer.vocab_size()) <= m.vocab(), "model '",
                      config.model, "': the tokenizer has ", tokenizer.vocab_size(),
                      " ids but the model's vocabulary only ", m.vocab());
  bos = scoring_bos(tokenizer, m);
  std::fprintf(stderr, "%s: loading %s ...\n", command.c_str(), source.description.c_str());
  engine = std::make_unique<generate::BlockEngine>(config, source);
  std::fprintf(stderr, "%s: %s\n", command.c_str(), engine->describe().c_str());
}

bool is_context_reading(const std::string& context) {
  return context == "stream" || context == "prefill" || context == "prefill-context";
}

ContextReading context_reading(const std::string& context, const policy::KvPolicy& kv) {
  H2OFLEX_INPUT_CHECK(is_context_reading(context), "--context '", context, "': expected ",
                      kContextReadings);
  const bool stream = context == "stream";
  H2OFLEX_INPUT_CHECK(!stream || !kv.resolve(2, 0).prefill_only, "kv policy '", kv.policy,
                      "' selects only at a prefill; streamed token by token it would keep "
                      "everything: use --context prefill");
  if (stream) return ContextReading::Stream;
  return context == "prefill" ? ContextReading::Prefill : ContextReading::PrefillContext;
}

std::string read_text_file(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "cannot read ", flag, " '", path, "'");
  std::ostringstream os;
  os << in.rdbuf();
  H2OFLEX_INPUT_CHECK(!in.bad(), "reading ", flag, " '", path, "' failed");
  return os.str();
}

}  // namespace h2oflex::eval
