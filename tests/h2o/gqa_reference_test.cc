// H2O and TOVA eviction with grouped-query attention and rotary embedding (the LLaMA-family and
// GPT-NeoX shapes) against the independent, mask-based reference (eviction_reference.h): a KV
// head's score adds up the probabilities of all query heads sharing it, keys are cached rotated at
// their real (padding-free) positions.
#include <gtest/gtest.h>

#include <random>

#include "eviction_reference.h"

namespace h2oflex {
namespace {

using namespace eviction_reference;

constexpr int kHeads = 8, kKvHeads = 2;

TEST(GqaReference, H2OEightQueryHeadsOverTwoKvHeads) {
  run_and_compare(make_problem(41, 3, kHeads, 24, 16, 4, 3, {0, 5, 11}, kKvHeads));
}

TEST(GqaReference, H2OWithRotaryEmbedding) {
  run_and_compare(make_problem(42, 3, kHeads, 24, 16, 4, 3, {0, 5, 11}, kKvHeads, 16));
}

TEST(GqaReference, H2OWithPartialRotaryAndOneKvHeadPerQueryHead) {
  // GPT-NeoX: multi-head attention, rotary on the first quarter of each head.
  run_and_compare(make_problem(43, 2, 4, 20, 14, 3, 3, {0, 7}, 4, 4));
}

TEST(GqaReference, H2OMultiQueryAttention) {
  run_and_compare(make_problem(44, 2, kHeads, 20, 12, 3, 2, {3, 0}, 1, 16));
}

TEST(GqaReference, TovaWithGroupedHeadsAndRotaryEmbedding) {
  run_and_compare(make_problem(45, 3, kHeads, 24, 16, 4, 3, {0, 5, 11}, kKvHeads, 16), "tova",
                  ScoreUpdate::Replace, {}, /*per_layer=*/true);
}

TEST(GqaReference, ManySeedsBudgetsAndPaddings) {
  for (uint32_t seed = 50; seed < 62; ++seed) {
    std::mt19937 rng(seed);
    const int prompt = 8 + static_cast<int>(rng() % 20);
    const int heavy = 1 + static_cast<int>(rng() % 6), recent = 1 + static_cast<int>(rng() % 5);
    const std::vector<int> pad = {0, static_cast<int>(rng() % prompt),
                                  static_cast<int>(rng() % prompt)};
    const int kv_heads = std::vector<int>{1, 2, 4}[seed % 3];
    const int rot_dim = seed % 2 ? 16 : 0;
    const Problem p =
        make_problem(seed, 3, kHeads, prompt, 10, heavy, recent, pad, kv_heads, rot_dim);
    SCOPED_TRACE("seed " + std::to_string(seed));
    run_and_compare(p, "h2o", ScoreUpdate::Add);
    run_and_compare(p, "tova", ScoreUpdate::Replace, {}, /*per_layer=*/true);
  }
}

// A budget holding the whole sequence evicts nothing: every real position stays, and attention is
// what a full cache gives.
TEST(GqaReference, BudgetCoveringTheSequenceEqualsFullAttention) {
  for (const auto& [heavy, recent] : {std::pair{20, 10}, std::pair{30, 10}}) {
    const Problem p = make_problem(46, 2, kHeads, 18, 12, heavy, recent, {0, 6}, kKvHeads, 16);
    run_and_compare(p);
    Engine h2o(p, "h2o"), full(p, "full");
    h2o.prefill();
    full.prefill();
    for (int t = p.prompt; t < p.total(); ++t) {
      const Tensor a = h2o.decode(t), b = full.decode(t);
      for (int64_t i = 0; i < a.numel(); ++i) {
        ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << "step " << t;
      }
    }
    for (int b = 0; b < p.batch; ++b) {
      for (int g = 0; g < p.kv_heads; ++g) {
        EXPECT_EQ(static_cast<int>(h2o.kept(b, g).size()), p.total() - p.pad[b]);
      }
    }
  }
}

// Rotation depends on the position among real tokens only: the same tokens behind more padding
// attend the same way and keep the same tokens, shifted by the padding.
TEST(GqaReference, RotaryPositionsIgnoreLeftPadding) {
  const int shift = 6;
  const Problem a = make_problem(47, 1, kHeads, 18, 12, 4, 3, {0}, kKvHeads, 16);
  Problem b = make_problem(48, 1, kHeads, 18 + shift, 12, 4, 3, {shift}, kKvHeads, 16);
  for (int t = 0; t < a.total(); ++t) {
    std::copy_n(&a.q[a.q_at(0, t, 0)], a.heads * a.dim, &b.q[b.q_at(0, t + shift, 0)]);
    std::copy_n(&a.k[a.kv_at(0, t, 0)], a.kv_heads * a.dim, &b.k[b.kv_at(0, t + shift, 0)]);
    std::copy_n(&a.v[a.kv_at(0, t, 0)], a.kv_heads * a.dim, &b.v[b.kv_at(0, t + shift, 0)]);
  }
  run_and_compare(b);
  Engine ea(a), eb(b);
  ea.prefill();
  eb.prefill();
  for (int t = a.prompt; t < a.total(); ++t) {
    const Tensor oa = ea.decode(t), ob = eb.decode(t + shift);
    for (int64_t i = 0; i < oa.numel(); ++i) {
      ASSERT_NEAR(oa.data<float>()[i], ob.data<float>()[i], 1e-5) << "step " << t;
    }
    for (int g = 0; g < a.kv_heads; ++g) {
      std::set<int> shifted;
      for (int pos : ea.kept(0, g)) shifted.insert(pos + shift);
      ASSERT_EQ(eb.kept(0, g), shifted) << "step " << t << " kv head " << g;
    }
  }
}

// Grouping and rotation really change what is kept, so matching the reference above checks them
// and not only the single-head path.
TEST(GqaReference, GroupingAndRotationChangeTheChoices) {
  const int heavy = 6, recent = 2;
  const Problem plain = make_problem(49, 2, kHeads, 24, 16, heavy, recent, {0, 4}, kKvHeads, 0);
  const Problem rotated = make_problem(49, 2, kHeads, 24, 16, heavy, recent, {0, 4}, kKvHeads, 16);
  // The first query head of each group alone, with its KV head: what one head would keep.
  Problem first_heads = make_problem(49, 2, kKvHeads, 24, 16, heavy, recent, {0, 4}, kKvHeads, 0);
  for (int b = 0; b < plain.batch; ++b) {
    for (int t = 0; t < plain.total(); ++t) {
      for (int g = 0; g < kKvHeads; ++g) {
        std::copy_n(&plain.q[plain.q_at(b, t, g * plain.group())], plain.dim,
                    &first_heads.q[first_heads.q_at(b, t, g)]);
      }
    }
  }
  first_heads.k = plain.k;
  first_heads.v = plain.v;
  Engine e_plain(plain), e_rot(rotated), e_first(first_heads);
  e_plain.prefill();
  e_rot.prefill();
  e_first.prefill();
  int rotation_differs = 0, grouping_differs = 0;  // (step, sequence, KV head) kept sets
  for (int t = plain.prompt; t < plain.total(); ++t) {
    e_plain.decode(t);
    e_rot.decode(t);
    e_first.decode(t);
    for (int b = 0; b < plain.batch; ++b) {
      for (int g = 0; g < kKvHeads; ++g) {
        rotation_differs += e_plain.kept(b, g) != e_rot.kept(b, g);
        grouping_differs += e_plain.kept(b, g) != e_first.kept(b, g);
      }
    }
  }
  const int checked = (plain.total() - plain.prompt) * plain.batch * kKvHeads;
  EXPECT_GE(rotation_differs, checked / 8) << "rotary embedding rarely changed the kept set";
  EXPECT_GT(grouping_differs, checked / 4) << "summing the group's heads rarely changed it";
}

}  // namespace
}  // namespace h2oflex
