// H2O inside a grouped-query model (8 query heads over 2 KV heads, rotary positions; the
// llama-gqa fixture): the kept
// set is per KV head, a budget that holds everything changes nothing, and a small budget bounds
// every (layer, sequence, KV head) while keeping the recent tokens and never a pad.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/generator.h"
#include "experiments/common/model_source.h"
#include "policy/kv_policy.h"
#include "tests/support/hf_fixtures.h"

namespace h2oflex {
namespace {

struct RunOutput {
  GenerateOutput out;
  std::vector<std::vector<float>> logits;  // per step
};

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150},
    {1, 9, 8, 7},
    {1, 33, 44, 55, 66, 77, 88}};
const int kPads[] = {0, 8, 5};

// The Hugging Face fixture's weights: random, but with attention far from uniform (unlike dummy
// weights), so heavy hitters differ between heads.
RunOutput run(const KvRule& rule, int gen_len) {
  const ModelSource src =
      open_model_source(testing_support::kFamilyFixtures + "llama-gqa", false, 0);
  const DecoderModel& model = *src.model;
  EXPECT_EQ(model.kv_geometry().query_heads, 8);
  EXPECT_EQ(model.kv_geometry().kv_heads, 2);
  const ModelWeights w = load_model_weights(model, DType::F32, src.producer);
  GenerationSettings g;
  g.gen_len = gen_len;
  g.eviction = rule;
  g.capture_kept = true;
  RunOutput r;
  g.on_logits = [&](int, const Tensor& l) {
    r.logits.emplace_back(l.data<float>(), l.data<float>() + l.numel());
  };
  r.out = generate_in_ram(model, w, kPrompts, g);
  return r;
}

TEST(H2OGroupedQuery, BudgetAtLeastPromptPlusGenEqualsFullCache) {
  const RunOutput full = run(KvRule{}, 8), kept = run(policy::kv_rule("h2o", 0, 10, 10), 8);
  EXPECT_EQ(full.out.tokens, kept.out.tokens);
  ASSERT_EQ(full.logits.size(), kept.logits.size());
  for (size_t s = 0; s < full.logits.size(); ++s) {
    for (size_t i = 0; i < full.logits[s].size(); ++i) {
      ASSERT_NEAR(full.logits[s][i], kept.logits[s][i], 1e-5) << "step " << s;
    }
  }
  EXPECT_EQ(full.out.kept, kept.out.kept);
}

TEST(H2OGroupedQuery, KeptSetsArePerKvHeadAndBounded) {
  const int gen = 10, padded_prompt = 12, kv_heads = 2;
  const RunOutput r = run(policy::kv_rule("h2o", 0, 2, 3), gen);
  const int last = padded_prompt + gen - 2;  // the last token that went through the model
  ASSERT_EQ(r.out.kept.size(), 3u);          // layers
  bool heads_differ = false;
  for (const auto& layer : r.out.kept) {
    ASSERT_EQ(layer.size(), kPrompts.size() * kv_heads);  // one set per (sequence, KV head)
    for (size_t row = 0; row < layer.size(); ++row) {
      const auto& kept = layer[row];
      const int pad = kPads[row / kv_heads];
      EXPECT_LE(kept.size(), 5u);
      for (int p : kept) EXPECT_GE(p, pad) << "padding kept";
      for (int p = last - 2; p <= last; ++p) {
        EXPECT_TRUE(std::find(kept.begin(), kept.end(), p) != kept.end()) << "recent " << p;
      }
      if (row % kv_heads == 1 && kept != layer[row - 1]) heads_differ = true;
    }
  }
  // The two KV heads score their tokens on their own query groups: somewhere they disagree.
  EXPECT_TRUE(heads_differ);
}

}  // namespace
}  // namespace h2oflex
