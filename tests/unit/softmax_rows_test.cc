// The CPU attention's vectorised exponential and causal softmax row against std::exp in double.
#include "runtime/cpu/softmax_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace h2oflex::cpu {
namespace {

TEST(SoftmaxRows, ExpIsWithinTwoUlpOverTheFloatRange) {
  double worst = 0;
  for (int i = 0; i <= 400000; ++i) {
    const float x = -87.3f + static_cast<float>(i) * (176.0f / 400000);  // up to 88.7
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(exp_approx(x) - exact) / exact);
  }
  // 2 ulp of a float is 2^-22 relative at worst.
  EXPECT_LT(worst, std::ldexp(1.0, -22));
  EXPECT_EQ(exp_approx(0.0f), 1.0f);
}

TEST(SoftmaxRows, ExpEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_approx(-88.0f), 0.0f);
  EXPECT_EQ(exp_approx(-inf), 0.0f);
  EXPECT_EQ(exp_approx(89.0f), inf);
  EXPECT_TRUE(std::isnan(exp_approx(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_GT(exp_approx(-87.3f), 0.0f);
}

TEST(SoftmaxRows, ShiftedSumMatchesTheScalarExponentials) {
  // Lengths around the vector widths, so the vector body and its remainder both run.
  for (int n : {1, 7, 16, 17, 64, 131}) {
    std::vector<float> p(static_cast<size_t>(n));
    for (int j = 0; j < n; ++j) p[j] = std::sin(0.7f * j) * 9.0f;
    std::vector<float> want(p);
    float want_sum = 0;
    for (float& v : want) {
      v = exp_approx(v - 3.0f);
      want_sum += v;
    }
    const float sum = exp_shifted_sum(p.data(), n, 3.0f);
    for (int j = 0; j < n; ++j) EXPECT_EQ(p[j], want[j]) << "n " << n << " j " << j;
    EXPECT_EQ(sum, want_sum);  // added in index order
  }
}

// Empty slots (-inf) and trailing room change neither the values nor the sum's bits.
TEST(SoftmaxRows, ShiftedSumIgnoresEmptySlots) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> dense, sparse;
  for (int j = 0; j < 50; ++j) {
    const float v = std::cos(1.3f * j) * 7.0f;
    dense.push_back(v);
    sparse.push_back(v);
    if (j % 3 == 0) sparse.push_back(-inf);
  }
  for (int j = 0; j < 21; ++j) sparse.push_back(-inf);
  const float a = exp_shifted_sum(dense.data(), static_cast<int64_t>(dense.size()), 2.0f);
  const float b = exp_shifted_sum(sparse.data(), static_cast<int64_t>(sparse.size()), 2.0f);
  EXPECT_EQ(a, b);
}

TEST(SoftmaxRows, CausalRowIsSoftmaxOfTheValidScoresAndAddsToTheColumns) {
  const int n = 40, valid = 29;
  std::vector<float> p(n);
  for (int j = 0; j < n; ++j) p[j] = 0.3f * j - 0.01f * j * j + (j % 3);
  std::vector<double> exact(valid);
  double mx = -1e30, total = 0;
  for (int j = 0; j < valid; ++j) mx = std::max(mx, static_cast<double>(p[j]));
  for (int j = 0; j < valid; ++j) total += exact[j] = std::exp(p[j] - mx);
  std::vector<double> col(n, 0.5);
  softmax_causal_row(p.data(), valid, n, col.data());
  double sum = 0;
  for (int j = 0; j < valid; ++j) {
    EXPECT_NEAR(p[j], exact[j] / total, 1e-6 * exact[j] / total + 1e-9) << j;
    EXPECT_DOUBLE_EQ(col[j], 0.5 + p[j]);
    sum += p[j];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  for (int j = valid; j < n; ++j) {
    EXPECT_EQ(p[j], 0.0f);
    EXPECT_EQ(col[j], 0.5);  // only the valid columns are touched
  }
}

}  // namespace
}  // namespace h2oflex::cpu
