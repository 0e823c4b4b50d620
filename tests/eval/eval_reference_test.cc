// The evaluator against the independent oracle of tests/fixtures/eval (tools/gen_eval_fixtures.py
// on the trained model models/trained/opt-small-en): Hugging Face's full-cache perplexity of the
// held-out text, and an f64 OPT forward of its own with per-(layer, head) H2O eviction, step by
// step — the per-token NLL and the kept sets of each budget.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "experiments/common/model_source.h"
#include "experiments/eval/perplexity.h"
#include "experiments/eval/token_scorer.h"
#include "tests/eval/trained_model_fixture.h"

namespace h2oflex::eval {
namespace {

using fixtures::heldout_tokens;

const nlohmann::json& fixture() {
  static const nlohmann::json j = fixtures::load_eval_fixture("expected.json");
  return j;
}

RunConfig model_config(const std::string& kv_yaml) {
  return fixtures::trained_model_config(fixture(), kv_yaml);
}

std::string counts(const char* policy, int heavy, int recent) {
  return std::string("{policy: ") + policy + ", heavy_tokens: " + std::to_string(heavy) +
         ", recent_tokens: " + std::to_string(recent) + "}";
}

// The first windows of the held-out text, full cache: each window's mean NLL is HF's.
TEST(EvalReference, HeldoutWindowsReproduceHuggingFace) {
  const nlohmann::json& ref = fixture()["heldout_perplexity"];
  const RunConfig c = model_config("{policy: full}");
  std::vector<int32_t> ids = heldout_tokens(fixture(), c.model);
  ASSERT_EQ(ids.size(), ref["tokens"].get<size_t>());
  const int window = ref["window"];
  constexpr size_t kWindows = 6;  // the whole text takes a minute; its first windows suffice
  ids.resize(kWindows * static_cast<size_t>(window));
  const ModelSource src = open_model_source(c.model, false, 0);
  generate::BlockEngine engine(c, src);
  const PerplexityResult r =
      text_perplexity(ids, ref["bos"].get<int32_t>(), window, ref["stride"], c.kv_policy, engine);
  ASSERT_EQ(r.windows.size(), kWindows);
  for (size_t w = 0; w < kWindows; ++w) {
    double sum = 0;
    for (size_t t = r.windows[w].begin; t < r.windows[w].end; ++t) sum += r.nll[t];
    const double mean = sum / static_cast<double>(window);
    const double want = ref["windows"][w]["nll_mean"];
    EXPECT_NEAR(mean, want, 1e-6 * want) << "window " << w;
  }
}

// Every policy with a budget covering the window reproduces the full cache's perplexity to 1e-6
// relative on the trained model (the exactness bar), streamed and, for the prefill-only
// SnapKV, read as one prefill.
TEST(EvalReference, CoveringBudgetsReproduceTheFullCache) {
  const nlohmann::json& ref = fixture()["heldout_perplexity"];
  const RunConfig full_config = model_config("{policy: full}");
  std::vector<int32_t> ids = heldout_tokens(fixture(), full_config.model);
  const int window = 128;
  ids.resize(2 * static_cast<size_t>(window));
  const ModelSource src = open_model_source(full_config.model, false, 0);
  auto perplexity = [&](const std::string& kv, ContextReading reading) {
    const RunConfig c = model_config(kv);
    generate::BlockEngine engine(c, src);
    return text_perplexity(ids, ref["bos"].get<int32_t>(), window, window, c.kv_policy, engine,
                           reading)
        .perplexity;
  };
  const double stream = perplexity("{policy: full}", ContextReading::Stream);
  const double prefill = perplexity("{policy: full}", ContextReading::Prefill);
  ASSERT_TRUE(std::isfinite(stream) && stream > 1);
  const char* covering = ", heavy_ratio: 0.5, recent_ratio: 0.5}";
  for (const std::string& kv :
       {std::string("{policy: h2o") + covering, std::string("{policy: tova") + covering,
        std::string("{policy: random") + covering,
        std::string("{policy: h2o, heavy_ratio: 0, recent_ratio: 1}"),
        std::string("{policy: streaming, sink_tokens: 4, recent_ratio: 1}")}) {
    EXPECT_NEAR(perplexity(kv, ContextReading::Stream), stream, 1e-6 * stream) << kv;
  }
  EXPECT_NEAR(perplexity(std::string("{policy: snapkv") + covering, ContextReading::Prefill),
              prefill, 1e-6 * prefill);
  // And a small budget does change it: the comparison sees eviction at all.
  EXPECT_GT(
      perplexity("{policy: h2o, heavy_ratio: 0.05, recent_ratio: 0.05}", ContextReading::Stream) /
              stream -
          1,
      1e-3);
}

// Every fixture window and budget: the engine's per-token NLL is the f64 reference's, and the
// kept positions of every (layer, head) after the last token fed are the reference's.
TEST(EvalReference, H2OStepByStepMatchesTheMaskReference) {
  const ModelSource src = open_model_source(model_config("{policy: full}").model, false, 0);
  const int heads = static_cast<int>(src.model->kv_geometry().kv_heads);
  ModelWeights weights = load_model_weights(*src.model, DType::F32, src.producer);
  int compared = 0;
  for (const nlohmann::json& w : fixture()["windows"]) {
    const std::vector<int32_t> ids = w["ids"];
    const std::vector<double> full = w["full_nll"];
    for (const auto& [name, b] : w["budgets"].items()) {
      SCOPED_TRACE("window at " + std::to_string(w["text_offset"].get<int>()) + ", " + name);
      const int heavy = b["heavy"], recent = b["recent"];
      const std::vector<double> want = b["nll"];
      // The scores through the evaluator (BlockEngine, token by token).
      const RunConfig c = model_config(counts("h2o", heavy, recent));
      generate::BlockEngine engine(c, src);
      ScoredSequence whole;
      whole.ids = ids;
      const auto got = score_sequences({whole}, c.kv_policy, engine);
      ASSERT_EQ(got[0].nll.size(), want.size());
      double off_full = 0;
      for (size_t t = 0; t < want.size(); ++t) {
        EXPECT_NEAR(got[0].nll[t], want[t], 1e-4) << "token " << t + 1;
        off_full = std::max(off_full, std::fabs(want[t] - full[t]));
      }
      if (name != "h2o_full") {
        EXPECT_GT(off_full, 1e-2) << "the reference's eviction changes nothing";
      }
      // The kept sets, from the in-RAM path with the same forced tokens.
      if (!b.contains("kept_after_last_fed")) continue;
      GenerationSettings g;
      g.gen_len = static_cast<int>(ids.size()) - 1;
      g.stop_at_eos = false;
      g.eviction = c.kv_policy.resolve(static_cast<int>(ids.size()), 0);
      g.forced = {std::vector<int32_t>(ids.begin() + 1, ids.end())};
      g.capture_kept = true;
      const GenerateOutput out = generate_in_ram(*src.model, weights, {{ids[0]}}, g);
      const nlohmann::json& kept = b["kept_after_last_fed"];
      ASSERT_EQ(out.kept.size(), kept.size());
      for (size_t l = 0; l < kept.size(); ++l) {
        for (int h = 0; h < heads; ++h) {
          const std::vector<int32_t> want_kept = kept[l][h];
          EXPECT_EQ(out.kept[l][h], want_kept) << "layer " << l << " head " << h;
        }
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 3);
}

}  // namespace
}  // namespace h2oflex::eval
