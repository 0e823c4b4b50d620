// Block planning: every request exactly once, one sampling setting per block, blocks within
// size and context, and length grouping reaching the least padding possible for the block size.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "experiments/generate/block_plan.h"

namespace h2oflex::generate {
namespace {

PreparedRequest make(size_t index, int len, int gen, float temperature = 0, float top_p = 1) {
  PreparedRequest r;
  r.index = index;
  r.prompt_ids.assign(static_cast<size_t>(len), 7);
  r.max_new_tokens = gen;
  r.temperature = temperature;
  r.top_p = top_p;
  return r;
}

// Structural properties any plan must have.
void expect_valid_plan(const std::vector<JobBlock>& blocks,
                       const std::vector<PreparedRequest>& reqs, const GroupingOptions& opt) {
  std::multiset<size_t> seen;
  for (const JobBlock& b : blocks) {
    ASSERT_FALSE(b.members.empty());
    EXPECT_LE(static_cast<int>(b.members.size()), opt.block_size);
    int longest = 0, largest_gen = 0;
    for (size_t m : b.members) {
      seen.insert(m);
      EXPECT_EQ(reqs[m].temperature, b.temperature);
      EXPECT_EQ(reqs[m].top_p, b.top_p);
      longest = std::max<int>(longest, static_cast<int>(reqs[m].prompt_ids.size()));
      largest_gen = std::max(largest_gen, reqs[m].max_new_tokens);
    }
    EXPECT_EQ(b.prompt_len, longest);
    EXPECT_EQ(b.gen_len, largest_gen);
    EXPECT_LE(b.prompt_len + b.gen_len, opt.max_positions);
  }
  ASSERT_EQ(seen.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(seen.count(i), 1u) << "request " << i;
}

TEST(BlockPlan, GroupedPaddingIsTheMinimumForTheBlockSize) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> len(1, 200);
  std::vector<PreparedRequest> reqs;
  for (size_t i = 0; i < 203; ++i) reqs.push_back(make(i, len(rng), 16));
  const GroupingOptions opt{8, true, 2048};
  const auto blocks = plan_blocks(reqs, opt);
  expect_valid_plan(blocks, reqs, opt);
  EXPECT_EQ(blocks.size(), 26u);  // ceil(203 / 8)

  // Oracle: with equal block sizes, padding is least when sorted lengths are cut into runs.
  std::vector<int> lengths;
  for (const auto& r : reqs) lengths.push_back(static_cast<int>(r.prompt_ids.size()));
  std::sort(lengths.begin(), lengths.end());
  int64_t best_padded = 0, tokens = 0;
  for (size_t s = 0; s < lengths.size(); s += 8) {
    const size_t e = std::min(lengths.size(), s + 8);
    best_padded += static_cast<int64_t>(e - s) * lengths[e - 1];
  }
  for (int l : lengths) tokens += l;
  const PlanCost cost = plan_cost(blocks, reqs);
  EXPECT_EQ(cost.prompt_tokens, tokens);
  EXPECT_EQ(cost.padded_prompt_tokens, best_padded);

  // Without grouping: consecutive input order, and (for random lengths) far more padding.
  const auto plain = plan_blocks(reqs, {8, false, 2048});
  expect_valid_plan(plain, reqs, {8, false, 2048});
  size_t next = 0;
  for (const JobBlock& b : plain) {
    for (size_t m : b.members) EXPECT_EQ(m, next++);
  }
  EXPECT_GT(plan_cost(plain, reqs).padded_prompt_tokens, best_padded * 3 / 2);
}

TEST(BlockPlan, OneSamplingSettingPerBlock) {
  std::vector<PreparedRequest> reqs;
  const float temps[] = {0, 0.7f, 0, 1.0f, 0.7f};
  for (size_t i = 0; i < 40; ++i) {
    const float t = temps[i % 5];
    reqs.push_back(make(i, 3 + static_cast<int>(i % 7), 4, t, t > 0.9f ? 0.9f : 1.0f));
  }
  const GroupingOptions opt{6, true, 2048};
  const auto blocks = plan_blocks(reqs, opt);
  expect_valid_plan(blocks, reqs, opt);
  // 16 greedy (3 blocks), 16 at 0.7 (3 blocks), 8 at 1.0 (2 blocks).
  EXPECT_EQ(blocks.size(), 8u);
  // Groups in order of first appearance: greedy first.
  EXPECT_EQ(blocks.front().temperature, 0.0f);
  EXPECT_EQ(blocks.back().temperature, 1.0f);
}

TEST(BlockPlan, BlocksFitTheContextTogether) {
  // Long prompt with few new tokens, short prompt with many: each fits alone, not padded together.
  std::vector<PreparedRequest> reqs{make(0, 90, 5), make(1, 10, 80), make(2, 95, 4)};
  const GroupingOptions opt{4, false, 100};
  const auto blocks = plan_blocks(reqs, opt);
  expect_valid_plan(blocks, reqs, opt);
  EXPECT_EQ(blocks.size(), 3u);
  const auto grouped = plan_blocks(reqs, {4, true, 100});
  expect_valid_plan(grouped, reqs, {4, true, 100});
}

TEST(BlockPlan, PlanDependsOnlyOnInput) {
  std::vector<PreparedRequest> reqs;
  for (size_t i = 0; i < 50; ++i) reqs.push_back(make(i, 1 + static_cast<int>(i * 37 % 23), 3));
  const auto a = plan_blocks(reqs, {4, true, 2048});
  const auto b = plan_blocks(reqs, {4, true, 2048});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].members, b[i].members);
}

}  // namespace
}  // namespace h2oflex::generate
