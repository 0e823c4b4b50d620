// H2O eviction checked against the independent, mask-based reference (eviction_reference.h):
// accumulated attention scores, heavy hitters plus a recent window.
#include <gtest/gtest.h>

#include <random>

#include "eviction_reference.h"

namespace h2oflex {
namespace {

using namespace eviction_reference;

TEST(H2OReference, PrefillAndEveryDecodeStepMatch) {
  run_and_compare(make_problem(1, 3, 4, 24, 20, 4, 3, {0, 5, 11}));
}

TEST(H2OReference, ManySeedsAndShapes) {
  for (uint32_t seed = 2; seed < 12; ++seed) {
    std::mt19937 rng(seed);
    const int prompt = 8 + static_cast<int>(rng() % 24);
    const int heavy = 1 + static_cast<int>(rng() % 6), recent = 1 + static_cast<int>(rng() % 6);
    std::vector<int> pad = {0, static_cast<int>(rng() % prompt), static_cast<int>(rng() % prompt)};
    run_and_compare(make_problem(seed, 3, 3, prompt, 12, heavy, recent, pad));
  }
}

// No heavy slots (the recent-only "Local" baseline): prefill keeps the last `recent` prompt
// tokens and every decode step drops the oldest — with a one-token prompt too, as eval runs it.
TEST(H2OReference, ZeroHeavyKeepsOnlyTheRecentWindow) {
  run_and_compare(make_problem(5, 3, 4, 24, 20, 0, 5, {0, 5, 11}));
  run_and_compare(make_problem(6, 2, 2, 1, 30, 0, 4, {0, 0}));
  run_and_compare(make_problem(7, 2, 2, 1, 30, 3, 4, {0, 0}));
}

TEST(H2OReference, ShortPromptsKeepEverythingUntilTheBudgetFills) {
  // 20 - 16 = 4 real tokens < budget 6: nothing is evicted at prefill.
  run_and_compare(make_problem(21, 2, 2, 20, 10, 3, 3, {16, 0}));
}

TEST(H2OReference, OneSequenceNeverChangesAnothersKeptSet) {
  Problem a = make_problem(5, 2, 3, 20, 10, 3, 4, {0, 3});
  Problem b = a;
  std::mt19937 rng(99);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int t = 0; t < b.total(); ++t) {  // rewrite sequence 1 entirely
    for (int h = 0; h < b.heads; ++h) {
      for (int d = 0; d < b.dim; ++d) {
        b.q[b.q_at(1, t, h) + d] = n(rng);
        b.k[b.kv_at(1, t, h) + d] = n(rng);
        b.v[b.kv_at(1, t, h) + d] = n(rng);
      }
    }
  }
  Engine ea(a), eb(b);
  ea.prefill();
  eb.prefill();
  for (int t = a.prompt; t < a.total(); ++t) {
    ea.decode(t);
    eb.decode(t);
    for (int h = 0; h < a.heads; ++h) ASSERT_EQ(ea.kept(0, h), eb.kept(0, h)) << "step " << t;
  }
  bool some_differ = false;
  for (int h = 0; h < a.heads; ++h) some_differ |= ea.kept(1, h) != eb.kept(1, h);
  EXPECT_TRUE(some_differ) << "the rewritten sequence should have chosen differently";
}

}  // namespace
}  // namespace h2oflex
