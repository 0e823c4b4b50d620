#include <gtest/gtest.h>

#include <cmath>

#include "runtime/core/half.h"
#include "runtime/core/rng.h"
#include "runtime/core/tensor.h"

namespace h2oflex {
namespace {

TEST(Half, Bf16RoundTripAndRounding) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
  // 1 + 2^-8 lies exactly halfway between two bf16 values: ties go to even (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
}

TEST(Half, F16MatchesKnownEncodings) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);
  EXPECT_EQ(f32_to_f16(5.9604645e-8f), 0x0001);  // smallest subnormal
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(Rng, NormalIsDeterministicAndOrderFree) {
  std::vector<float> a(1000), b(500);
  fill_normal(a.data(), 1000, 7, 3, 0, 0.0f, 1.0f);
  fill_normal(b.data(), 500, 7, 3, 500, 0.0f, 1.0f);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(a[500 + i], b[i]);
  double mean = 0, var = 0;
  std::vector<float> c(200000);
  fill_normal(c.data(), c.size(), 1, 1, 0, 0.0f, 1.0f);
  for (float x : c) mean += x;
  mean /= c.size();
  for (float x : c) var += (x - mean) * (x - mean);
  var /= c.size();
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NE(normal_at(1, 1, 0), normal_at(2, 1, 0));
}

// Known-answer vectors published with Random123 (philox4x32, 10 rounds).
TEST(Rng, PhiloxMatchesPublishedVectors) {
  using W = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32(0, 0, 0), (W{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32(~0ull, ~0ull, ~0ull), (W{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull),
            (W{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Tensor, SliceSharesStorage) {
  Tensor t = Tensor::zeros({4, 3}, DType::F32);
  Tensor s = t.slice(1, 3);
  s.data<float>()[0] = 5.0f;
  EXPECT_EQ(t.data<float>()[3], 5.0f);
  EXPECT_EQ(s.dim(0), 2);
  EXPECT_THROW(t.slice(2, 5), InternalError);
}

}  // namespace
}  // namespace h2oflex
