// The `random` control checked against the independent, mask-based reference
// (eviction_reference.h): outside the recent window the tokens kept are those of the highest
// fixed draw, whatever attention says — the same choice for every sequence and head.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "eviction_reference.h"

namespace h2oflex {
namespace {

using namespace eviction_reference;

std::vector<double> draws(int n) {
  const KvRule rule = policy::kv_rule("random", 0, 1, 1);
  std::vector<double> d;
  for (int j = 0; j < n; ++j) d.push_back(rule.fixed_score(j));
  return d;
}

TEST(RandomReference, PrefillAndEveryDecodeStepMatch) {
  const Problem p = make_problem(2, 3, 4, 24, 20, 4, 3, {0, 5, 11});
  run_and_compare(p, "random", ScoreUpdate::Fixed, draws(p.total()));
}

TEST(RandomReference, ManySeedsAndShapes) {
  for (uint32_t seed = 50; seed < 58; ++seed) {
    std::mt19937 rng(seed);
    const int prompt = 1 + static_cast<int>(rng() % 24);
    const int heavy = static_cast<int>(rng() % 6), recent = 1 + static_cast<int>(rng() % 6);
    std::vector<int> pad = {0, static_cast<int>(rng() % prompt)};
    const Problem p = make_problem(seed, 2, 3, prompt, 14, heavy, recent, pad);
    run_and_compare(p, "random", ScoreUpdate::Fixed, draws(p.total()));
  }
}

// The draw is a spread of distinct values in [0, 1), fixed from run to run.
TEST(RandomReference, DrawsAreDistinctFractions) {
  const std::vector<double> d = draws(4096);
  const std::set<double> distinct(d.begin(), d.end());
  EXPECT_GT(distinct.size(), 4090u);
  double lo = 1, hi = 0;
  for (double x : d) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, 0.01);
  EXPECT_GT(hi, 0.99);
  EXPECT_EQ(d, draws(4096));
}

}  // namespace
}  // namespace h2oflex
