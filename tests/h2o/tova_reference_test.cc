// TOVA checked against the independent, mask-based reference (eviction_reference.h): each
// decode step's attention probabilities, averaged over the layer's heads, replace the scores, so
// the victim is the token the newest query attends to least on average, outside the recent
// window — one kept set per layer, shared by its heads.
#include <gtest/gtest.h>

#include <random>

#include "eviction_reference.h"

namespace h2oflex {
namespace {

using namespace eviction_reference;

TEST(TovaReference, PrefillAndEveryDecodeStepMatch) {
  run_and_compare(make_problem(1, 3, 4, 24, 20, 4, 3, {0, 5, 11}), "tova", ScoreUpdate::Replace, {},
                  /*per_layer=*/true);
}

TEST(TovaReference, ManySeedsAndShapes) {
  for (uint32_t seed = 30; seed < 40; ++seed) {
    std::mt19937 rng(seed);
    const int prompt = 8 + static_cast<int>(rng() % 24);
    const int heavy = 1 + static_cast<int>(rng() % 6), recent = 1 + static_cast<int>(rng() % 6);
    std::vector<int> pad = {0, static_cast<int>(rng() % prompt), static_cast<int>(rng() % prompt)};
    run_and_compare(make_problem(seed, 3, 3, prompt, 12, heavy, recent, pad), "tova",
                    ScoreUpdate::Replace, {}, /*per_layer=*/true);
  }
}

// The two updates really choose differently, so matching the reference above says something
// about the update and not only about prefill selection and the recent window.
TEST(TovaReference, ChoosesOtherVictimsThanH2O) {
  const Problem p = make_problem(7, 2, 3, 24, 16, 3, 2, {0, 4});
  Engine h2o(p, "h2o"), tova(p, "tova");
  h2o.prefill();
  tova.prefill();
  bool differ = false;
  for (int t = p.prompt; t < p.total(); ++t) {
    h2o.decode(t);
    tova.decode(t);
    for (int b = 0; b < p.batch; ++b) {
      for (int h = 0; h < p.heads; ++h) differ |= h2o.kept(b, h) != tova.kept(b, h);
    }
  }
  EXPECT_TRUE(differ) << "tova kept the same tokens as h2o at every step";
}

// One kept set per layer: every head of a sequence holds the same positions after each step,
// where per-head eviction (h2o) lets them differ.
TEST(TovaReference, HeadsOfALayerKeepOneSet) {
  const Problem p = make_problem(8, 2, 4, 24, 16, 3, 2, {0, 4});
  Engine h2o(p, "h2o"), tova(p, "tova");
  h2o.prefill();
  tova.prefill();
  bool heads_differ_under_h2o = false;
  for (int t = p.prompt; t < p.total(); ++t) {
    h2o.decode(t);
    tova.decode(t);
    for (int b = 0; b < p.batch; ++b) {
      for (int h = 1; h < p.heads; ++h) {
        ASSERT_EQ(tova.kept(b, h), tova.kept(b, 0)) << "step " << t << " seq " << b;
        heads_differ_under_h2o |= h2o.kept(b, h) != h2o.kept(b, 0);
      }
    }
  }
  EXPECT_TRUE(heads_differ_under_h2o);
}

}  // namespace
}  // namespace h2oflex
