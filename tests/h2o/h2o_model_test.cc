// H2O inside the model: a budget that holds everything changes nothing, and a small budget
// really bounds what each sequence keeps.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/generator.h"
#include "models/opt/opt_model.h"

namespace h2oflex {
namespace {

OptConfig tiny() {
  OptConfig c;
  c.name = "tiny";
  c.hidden = 64;
  c.heads = 4;
  c.layers = 2;
  c.ffn = 128;
  c.vocab = 300;
  c.max_positions = 64;
  c.word_embed_dim = 64;
  return c;
}

struct RunOutput {
  GenerateOutput out;
  std::vector<std::vector<float>> logits;  // per step
};

RunOutput run(const KvRule& rule, int gen_len) {
  const OptModel model(tiny());
  const ModelWeights w = load_model_weights(model, DType::F32, dummy_weight_producer(5));
  GenerationSettings g;
  g.gen_len = gen_len;
  g.eviction = rule;
  g.capture_kept = true;
  RunOutput r;
  g.on_logits = [&](int, const Tensor& l) {
    r.logits.emplace_back(l.data<float>(), l.data<float>() + l.numel());
  };
  r.out = generate_in_ram(model, w,
                          {{2, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150},
                           {2, 9, 8, 7},
                           {2, 33, 44, 55, 66, 77, 88}},
                          g);
  return r;
}

TEST(H2OModel, BudgetAtLeastPromptPlusGenEqualsFullCache) {
  const KvRule h2o = policy::kv_rule("h2o", 0, 10, 10);  // 20 >= 12 + 8
  const RunOutput full = run(KvRule{}, 8), kept = run(h2o, 8);
  EXPECT_EQ(full.out.tokens, kept.out.tokens);
  ASSERT_EQ(full.logits.size(), kept.logits.size());
  for (size_t s = 0; s < full.logits.size(); ++s) {
    for (size_t i = 0; i < full.logits[s].size(); ++i) {
      ASSERT_NEAR(full.logits[s][i], kept.logits[s][i], 1e-5) << "step " << s;
    }
  }
  EXPECT_EQ(full.out.kept, kept.out.kept);
}

TEST(H2OModel, SmallBudgetBoundsEverySequenceAndHead) {
  const KvRule h2o = policy::kv_rule("h2o", 0, 2, 3);
  const int gen = 10, padded_prompt = 12;
  const RunOutput r = run(h2o, gen);
  const int pads[] = {0, 8, 5};
  const int last = padded_prompt + gen - 2;  // the last token that went through the model
  for (const auto& layer : r.out.kept) {
    for (size_t row = 0; row < layer.size(); ++row) {
      const auto& kept = layer[row];
      const int pad = pads[row / 4];
      EXPECT_LE(kept.size(), 5u);
      for (int p : kept) EXPECT_GE(p, pad) << "padding kept";
      for (int p = last - 2; p <= last; ++p) {
        EXPECT_TRUE(std::find(kept.begin(), kept.end(), p) != kept.end()) << "recent " << p;
      }
    }
  }
}

TEST(H2OModel, StreamingKeepsSinksAndRecentWindow) {
  const KvRule s = policy::kv_rule("streaming", 2, 0, 3);  // 2 sink tokens
  const RunOutput r = run(s, 10);
  const int pads[] = {0, 8, 5};
  const int last = 12 + 10 - 2;
  for (const auto& layer : r.out.kept) {
    for (size_t row = 0; row < layer.size(); ++row) {
      const int pad = pads[row / 4];
      const std::vector<int32_t> want = {pad, pad + 1, last - 2, last - 1, last};
      EXPECT_EQ(layer[row], want) << "row " << row;
    }
  }
}

}  // namespace
}  // namespace h2oflex
