// plan_stages against an expectation computed another way: every split of the decoder layers
// into contiguous non-empty parts is enumerated, and the plan must be the one that is most
// even (smallest difference between the largest and the smallest stage) and gives the extra
// layers to the earlier stages.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/dist/stage_plan.h"

namespace h2oflex {
namespace {

// Every way to write `layers` as an ordered sum of `stages` positive parts.
void compositions(size_t layers, size_t stages, std::vector<size_t>& prefix,
                  std::vector<std::vector<size_t>>& out) {
  if (stages == 0) {
    if (layers == 0) out.push_back(prefix);
    return;
  }
  for (size_t part = 1; part + (stages - 1) <= layers; ++part) {
    prefix.push_back(part);
    compositions(layers - part, stages - 1, prefix, out);
    prefix.pop_back();
  }
}

// The layers per stage the plan should give: among all splits with the smallest spread
// (largest part less smallest part), the lexicographically largest one (the extra layers go to
// the earlier stages).
std::vector<size_t> expected_layers(size_t layers, size_t stages) {
  std::vector<size_t> prefix;
  std::vector<std::vector<size_t>> all;
  compositions(layers, stages, prefix, all);
  auto spread = [](const std::vector<size_t>& c) {
    return *std::max_element(c.begin(), c.end()) - *std::min_element(c.begin(), c.end());
  };
  size_t best_spread = layers + 1;
  for (const auto& c : all) best_spread = std::min(best_spread, spread(c));
  std::vector<size_t> best;
  for (const auto& c : all) {
    if (spread(c) == best_spread && (best.empty() || c > best)) best = c;
  }
  return best;
}

TEST(StagePlan, MatchesBruteForceOnSmallModels) {
  for (size_t layers = 1; layers <= 10; ++layers) {
    const size_t units = layers + 2;
    for (size_t stages = 1; stages <= layers; ++stages) {
      SCOPED_TRACE("layers " + std::to_string(layers) + ", stages " + std::to_string(stages));
      const std::vector<StageRange> plan = plan_stages(units, stages);
      ASSERT_EQ(plan.size(), stages);
      // Every unit in exactly one stage, in order, without gaps.
      std::vector<int> owners(units, 0);
      for (const StageRange& r : plan) {
        ASSERT_LT(r.begin, r.end);
        for (size_t u = r.begin; u < r.end; ++u) ++owners[u];
      }
      EXPECT_EQ(std::count(owners.begin(), owners.end(), 1), static_cast<long>(units));
      EXPECT_EQ(plan.front().begin, 0u);
      EXPECT_EQ(plan.back().end, units);
      for (size_t s = 1; s < stages; ++s) EXPECT_EQ(plan[s].begin, plan[s - 1].end);
      // Embedding first, head last.
      EXPECT_TRUE(plan.front().contains(0));
      EXPECT_TRUE(plan.back().contains(units - 1));
      // Decoder layers per stage: the stage's units less the embedding and the head it holds.
      std::vector<size_t> got;
      for (size_t s = 0; s < stages; ++s) {
        got.push_back(plan[s].size() - (s == 0 ? 1 : 0) - (s == stages - 1 ? 1 : 0));
      }
      EXPECT_EQ(got, expected_layers(layers, stages));
    }
  }
}

TEST(StagePlan, LargeModelIsBalancedWithinOneLayer) {
  // 80 decoder layers (a 70B-class model) over 3 stages: 27, 27, 26.
  const auto plan = plan_stages(82, 3);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0], (StageRange{0, 28}));   // embedding + layers 1..27
  EXPECT_EQ(plan[1], (StageRange{28, 55}));  // layers 28..54
  EXPECT_EQ(plan[2], (StageRange{55, 82}));  // layers 55..80 + head
}

TEST(StagePlan, OneStageHoldsEverything) {
  const auto plan = plan_stages(5, 1);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0], (StageRange{0, 5}));
}

// Runs plan_stages(units, stages) and returns the InputError's text ("" if none was thrown).
std::string error_of(size_t units, size_t stages) {
  try {
    plan_stages(units, stages);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(StagePlan, RejectsImpossibleRequestsNamingThem) {
  const std::string none = error_of(6, 0);
  EXPECT_NE(none.find("0 requested"), std::string::npos) << none;
  const std::string too_many = error_of(6, 5);  // 4 decoder layers
  EXPECT_NE(too_many.find("5 stages"), std::string::npos) << too_many;
  EXPECT_NE(too_many.find("only 4 decoder layers"), std::string::npos) << too_many;
  const std::string no_layers = error_of(2, 1);
  EXPECT_NE(no_layers.find("only 0 decoder layers"), std::string::npos) << no_layers;
  const std::string no_head = error_of(1, 1);
  EXPECT_NE(no_head.find("1 units"), std::string::npos) << no_head;
  EXPECT_EQ(error_of(6, 4), "");  // one layer per stage is fine
}

}  // namespace
}  // namespace h2oflex
