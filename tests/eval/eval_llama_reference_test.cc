// The evaluator on the trained LLaMA-architecture model with grouped-query attention
// (models/trained/llama-small-en: 4 query heads sharing 2 key-value heads, rotary positions,
// RMSNorm, SwiGLU, tied embeddings) against Hugging Face's full-cache perplexity of its held-out
// text (tests/fixtures/eval/llama_expected.json, tools/gen_llama_eval_fixtures.py), and H2O
// evicting from its GQA cache.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/generator.h"
#include "experiments/common/model_source.h"
#include "experiments/eval/perplexity.h"
#include "tests/eval/trained_model_fixture.h"

namespace h2oflex::eval {
namespace {

const nlohmann::json& fixture() {
  static const nlohmann::json j = fixtures::load_eval_fixture("llama_expected.json");
  return j;
}

// The text tokens of heldout.txt: all of them, or those of the fixture's (first) windows.
std::vector<int32_t> heldout_tokens(const std::string& model_dir, bool whole_text) {
  const nlohmann::json& ref = fixture()["heldout_perplexity"];
  std::vector<int32_t> ids = fixtures::heldout_tokens(fixture(), model_dir);
  if (!whole_text) ids.resize(ref["windows"].size() * ref["window"].get<size_t>());
  return ids;
}

PerplexityResult heldout_perplexity(const std::string& kv_yaml, bool whole_text) {
  const nlohmann::json& ref = fixture()["heldout_perplexity"];
  const RunConfig c = fixtures::trained_model_config(fixture(), kv_yaml);
  const ModelSource src = open_model_source(c.model, false, 0);
  const KvGeometry g = src.model->kv_geometry();
  EXPECT_EQ(g.query_heads, fixture()["model"]["num_attention_heads"].get<int64_t>());
  EXPECT_EQ(g.kv_heads, fixture()["model"]["num_key_value_heads"].get<int64_t>());
  EXPECT_LT(g.kv_heads, g.query_heads) << "the cache is grouped-query";
  generate::BlockEngine engine(c, src);
  return text_perplexity(heldout_tokens(c.model, whole_text), ref["bos"].get<int32_t>(),
                         ref["window"], ref["stride"], c.kv_policy, engine);
}

// The first windows of the held-out text, full cache: each window's mean NLL is HF's.
TEST(EvalLlamaReference, HeldoutWindowsReproduceHuggingFace) {
  const nlohmann::json& ref = fixture()["heldout_perplexity"];
  const PerplexityResult r = heldout_perplexity("{policy: full}", /*whole_text=*/false);
  const size_t windows = ref["windows"].size();
  ASSERT_EQ(r.windows.size(), windows);
  const int window = ref["window"];
  for (size_t w = 0; w < windows; ++w) {
    ASSERT_EQ(r.windows[w].begin, ref["windows"][w]["begin"].get<size_t>());
    ASSERT_EQ(r.windows[w].end, ref["windows"][w]["end"].get<size_t>());
    double sum = 0;
    for (size_t t = r.windows[w].begin; t < r.windows[w].end; ++t) sum += r.nll[t];
    const double mean = sum / static_cast<double>(window);
    const double want = ref["windows"][w]["nll_mean"];
    EXPECT_NEAR(mean, want, 1e-6 * want) << "window " << w;
  }
  EXPECT_NEAR(r.nll_mean, ref["nll_mean"].get<double>(), 1e-6 * ref["nll_mean"].get<double>());
}

// H2O at 20% of each window (heavy 10%, recent 10%) evicts from the GQA cache: the perplexity of
// the whole held-out text moves away from the full cache's (HF's) and stays finite. (The whole
// text, not the first windows: H2O lowers the perplexity of some windows of this small model and
// raises that of others, and over the first 4 the two nearly cancel, 6e-4 relative.)
TEST(EvalLlamaReference, H2OTwentyPercentChangesThePerplexity) {
  const nlohmann::json& ref = fixture()["heldout_perplexity"]["whole_text"];
  const double full = ref["perplexity"];
  const PerplexityResult r =
      heldout_perplexity("{policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1}", /*whole_text=*/true);
  ASSERT_EQ(r.windows.size(), ref["windows"].get<size_t>());
  ASSERT_EQ(r.nll.size(), ref["scored"].get<size_t>());
  ASSERT_EQ(r.rules.size(), r.windows.size());
  for (size_t w = 0; w < r.rules.size(); ++w) {
    // floor(0.1 * the window's ids, the BOS included): 51 for a whole window of 512.
    const int want =
        static_cast<int>(0.1 * static_cast<double>(r.windows[w].end - r.windows[w].begin + 1));
    EXPECT_TRUE(r.rules[w].evicts());
    EXPECT_EQ(r.rules[w].heavy, want) << "window " << w;
    EXPECT_EQ(r.rules[w].recent, want) << "window " << w;
  }
  ASSERT_TRUE(std::isfinite(r.perplexity)) << r.perplexity;
  for (const double nll : r.nll) ASSERT_TRUE(std::isfinite(nll));
  EXPECT_GT(std::fabs(r.perplexity / full - 1), 1e-3)
      << "H2O 20%: " << r.perplexity << ", full cache: " << full;
}

}  // namespace
}  // namespace h2oflex::eval
