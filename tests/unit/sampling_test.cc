// Token choice: argmax ties, and seeded top-p sampling against the distribution it must follow.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

Tensor logits_row(const std::vector<float>& v) {
  Tensor t = Tensor::empty({1, static_cast<int64_t>(v.size())}, DType::F32);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

TEST(Sampling, ArgmaxTakesTheLowestIdOnTies) {
  std::vector<int32_t> ids;
  ops::argmax(logits_row({1.0f, 3.0f, 3.0f, 2.0f}), ids);
  EXPECT_EQ(ids, std::vector<int32_t>{1});
}

// Frequencies over many independent draws (distinct row keys) follow softmax(l / T) restricted to
// the top-p nucleus and renormalized.
TEST(Sampling, FrequenciesFollowTheNucleusDistribution) {
  const std::vector<float> l = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f};
  const float temperature = 0.8f, top_p = 0.8f;
  std::vector<double> p(l.size());
  double z = 0;
  for (size_t i = 0; i < l.size(); ++i) z += p[i] = std::exp(l[i] / temperature);
  for (double& x : p) x /= z;
  // p is sorted descending already: the nucleus is the shortest prefix reaching top_p.
  double mass = 0;
  size_t keep = 0;
  while (mass < top_p) mass += p[keep++];
  const int draws = 20000;
  Tensor logits = Tensor::empty({draws, static_cast<int64_t>(l.size())}, DType::F32);
  for (int r = 0; r < draws; ++r) std::copy(l.begin(), l.end(), logits.data<float>() + r * 5);
  std::vector<uint64_t> keys(draws);
  for (int r = 0; r < draws; ++r) keys[r] = static_cast<uint64_t>(r);
  std::vector<int32_t> ids;
  ops::sample(logits, {temperature, top_p, 42}, keys, 0, ids);
  std::map<int32_t, int> count;
  for (int32_t id : ids) ++count[id];
  for (size_t i = 0; i < l.size(); ++i) {
    const double want = i < keep ? p[i] / mass : 0.0;
    const double got = static_cast<double>(count[static_cast<int32_t>(i)]) / draws;
    EXPECT_NEAR(got, want, 0.015) << "token " << i;
  }
}

TEST(Sampling, SameSeedKeyAndStepGiveTheSameToken) {
  const Tensor l = logits_row({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f});
  std::vector<int32_t> a, b, c;
  int differ = 0;
  for (uint64_t step = 0; step < 50; ++step) {
    ops::sample(l, {1.0f, 1.0f, 7}, {123}, step, a);
    ops::sample(l, {1.0f, 1.0f, 7}, {123}, step, b);
    ops::sample(l, {1.0f, 1.0f, 8}, {123}, step, c);
    EXPECT_EQ(a, b);
    differ += a != c;
  }
  EXPECT_GT(differ, 10) << "another seed should draw differently";
}

TEST(Sampling, BadParametersAreInputErrors) {
  std::vector<int32_t> ids;
  const Tensor l = logits_row({0.0f, 1.0f});
  EXPECT_THROW(ops::sample(l, {0.0f, 1.0f, 1}, {0}, 0, ids), InputError);
  EXPECT_THROW(ops::sample(l, {1.0f, 1.5f, 1}, {0}, 0, ids), InputError);
}

}  // namespace
}  // namespace h2oflex
