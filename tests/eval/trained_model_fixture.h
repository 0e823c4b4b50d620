// The trained models' oracle fixtures (tests/fixtures/eval/*.json, written by tools/gen_*eval_
// fixtures.py) and what the reference tests need from them: the engine configuration that
// scores the model and its held-out text as tokens, checked against the tokenization HF did.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "experiments/common/run_config.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "policy/kv_policy.h"
#include "tests/support/hf_fixtures.h"

namespace h2oflex::eval::fixtures {

inline std::string source_root() {
  return testing_support::fixture_source_dir() + "/";
}

// tests/fixtures/eval/<file>, parsed.
inline nlohmann::json load_eval_fixture(const std::string& file) {
  std::ifstream in(source_root() + "tests/fixtures/eval/" + file);
  return nlohmann::json::parse(in);
}

// The evaluator's configuration in the tests: `model_dir`, f32 on the CPU, `batch_size`
// sequences a block, under the KV policy `kv_yaml`.
inline RunConfig scoring_config(const std::string& model_dir, const std::string& kv_yaml,
                                int batch_size) {
  RunConfig c;
  c.source = "test";
  c.model = model_dir;
  c.dummy = false;
  c.compute_dtype = "f32";
  c.compute_device = "cpu";
  c.batch_size = batch_size;
  c.kv_policy = policy::parse_kv_policy(YAML::Load(kv_yaml));
  return c;
}

// The fixture's trained model, 16 sequences a block.
inline RunConfig trained_model_config(const nlohmann::json& fixture, const std::string& kv_yaml) {
  return scoring_config(source_root() + fixture["model_dir"].get<std::string>(), kv_yaml, 16);
}

// The text tokens of the fixture's held-out text (heldout_perplexity.text in the model's
// directory), encoded without special tokens; the count and the BOS are HF's.
inline std::vector<int32_t> heldout_tokens(const nlohmann::json& fixture,
                                           const std::string& model_dir) {
  const nlohmann::json& ref = fixture["heldout_perplexity"];
  const BpeTokenizer tok = load_tokenizer(model_dir);
  EXPECT_EQ(tok.bos_to_prepend(), std::optional<int32_t>(ref["bos"].get<int32_t>()))
      << "the tokenizer prepends the BOS HF's did";
  std::ifstream in(model_dir + "/" + ref["text"].get<std::string>(), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<int32_t> ids = tok.encode(text, /*add_bos=*/false);
  EXPECT_EQ(ids.size(), ref["tokens"].get<size_t>()) << "the tokenizer splits the text as HF did";
  return ids;
}

}  // namespace h2oflex::eval::fixtures
