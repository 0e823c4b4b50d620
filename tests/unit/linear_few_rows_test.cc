// Decode-sized bf16 linear (runtime/cpu/linear_few_rows_cpu.cc), reached through ops::linear and
// ops::linear_same_input: against a double-precision product of the bf16-rounded operands, row
// by row independent of how many rows came with it, close to the library GEMM that takes larger
// inputs, and several products of one input the same bits as each alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/cpu/linear_few_rows.h"
#include "runtime/ops/ops.h"
#include "tests/support/random_rows.h"

namespace h2oflex {
namespace {

// Round to nearest even, written out here rather than taken from the code under test.
uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

double from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

Tensor to_bf16_tensor(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), DType::BF16);
  for (int64_t i = 0; i < x.numel(); ++i) out.data<uint16_t>()[i] = to_bf16(x.data<float>()[i]);
  return out;
}

TEST(LinearFewRowsBf16, IsTheProductOfTheRoundedOperands) {
  // Row counts of every choice of weight rows per pass (4, 3, 2) and of inputs taken in two
  // halves (even and odd), output counts that leave a ragged last pass, short and long inner
  // dimensions.
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 33, 5},
                         {3, 64, 40},
                         {8, 2048, 129},
                         {12, 100, 67},
                         {15, 64, 33},
                         {16, 130, 70},
                         {cpu::kFewRowsBf16, 16, 3}}) {
    const Tensor x = random_rows(m, k, 1, 1.0f);
    const Tensor w = to_bf16_tensor(random_rows(n, k, 2, 0.05f));
    const Tensor bias = random_rows(1, n, 3, 0.1f).reshape({n});
    for (bool relu : {false, true}) {
      Tensor got = Tensor::empty({m, n}, DType::F32);
      ops::linear(x, w, &bias, got, ops::ComputeType::BF16, relu);
      double worst = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = bias.data<float>()[j], magnitude = 0;
          for (int64_t t = 0; t < k; ++t) {
            const double p = from_bf16(to_bf16(x.data<float>()[i * k + t])) *
                             from_bf16(w.data<uint16_t>()[j * k + t]);
            want += p;
            magnitude += std::fabs(p);
          }
          if (relu) want = std::max(want, 0.0);
          // f32 sums: a few units of 2^-24 of the summed magnitudes per term added.
          const double bound = (magnitude + 1e-3) * 1e-6 * std::sqrt(static_cast<double>(k));
          worst = std::max(worst, std::fabs(got.data<float>()[i * n + j] - want) / bound);
        }
      }
      EXPECT_LT(worst, 1.0) << m << "x" << k << "x" << n << " relu " << relu;
    }
  }
}

// A row's result is the same bits whatever other rows share the call: a sequence's tokens must
// not depend on the batch it ran in.
TEST(LinearFewRowsBf16, EachRowIsIndependentOfTheOthers) {
  const int64_t k = 300, n = 200;
  const Tensor x = random_rows(cpu::kFewRowsBf16, k, 4, 1.0f);
  const Tensor w = to_bf16_tensor(random_rows(n, k, 5, 0.05f));
  Tensor all = Tensor::empty({cpu::kFewRowsBf16, n}, DType::F32);
  ops::linear(x, w, nullptr, all, ops::ComputeType::BF16);
  for (int64_t m : {1, 5, 8}) {
    for (int64_t first : {int64_t{0}, cpu::kFewRowsBf16 - m}) {
      Tensor part = Tensor::empty({m, k}, DType::F32);
      std::memcpy(part.raw(), x.data<float>() + first * k, static_cast<size_t>(m * k) * 4);
      Tensor got = Tensor::empty({m, n}, DType::F32);
      ops::linear(part, w, nullptr, got, ops::ComputeType::BF16);
      EXPECT_EQ(std::memcmp(got.raw(), all.data<float>() + first * n, got.nbytes()), 0)
          << m << " rows from row " << first;
    }
  }
}

// One row more and the library's bf16 GEMM takes the input: the two agree to f32 rounding.
TEST(LinearFewRowsBf16, AgreesWithTheLibraryGemmOfOneRowMore) {
  const int64_t k = 1000, n = 300;
  const Tensor x = random_rows(cpu::kFewRowsBf16 + 1, k, 6, 1.0f);
  const Tensor w = to_bf16_tensor(random_rows(n, k, 7, 0.05f));
  Tensor many = Tensor::empty({cpu::kFewRowsBf16 + 1, n}, DType::F32);
  ops::linear(x, w, nullptr, many, ops::ComputeType::BF16);
  Tensor few_in = Tensor::empty({cpu::kFewRowsBf16, k}, DType::F32);
  std::memcpy(few_in.raw(), x.raw(), few_in.nbytes());
  Tensor few = Tensor::empty({cpu::kFewRowsBf16, n}, DType::F32);
  ops::linear(few_in, w, nullptr, few, ops::ComputeType::BF16);
  for (int64_t i = 0; i < cpu::kFewRowsBf16 * n; ++i) {
    EXPECT_NEAR(few.data<float>()[i], many.data<float>()[i], 1e-4) << i;
  }
}

// Products of one input in one call: each the same bits as its own linear(), in bf16 (the
// few-rows kernel's shared region up to kFewRowsBf16 rows, the library beyond) and in f32.
TEST(LinearSameInput, EachProductIsTheSameBitsAsItsOwnLinear) {
  const int64_t k = 300;
  const Tensor w1 = random_rows(70, k, 8, 0.05f), w2 = random_rows(129, k, 9, 0.05f);
  const Tensor w3 = random_rows(5, k, 10, 0.05f);
  const Tensor b1 = random_rows(1, 70, 11, 0.1f).reshape({70});
  const Tensor b3 = random_rows(1, 5, 12, 0.1f).reshape({5});
  for (ops::ComputeType ct : {ops::ComputeType::BF16, ops::ComputeType::F32}) {
    const auto stored = [&](const Tensor& w) {
      return ct == ops::ComputeType::BF16 ? to_bf16_tensor(w) : w;
    };
    const Tensor s1 = stored(w1), s2 = stored(w2), s3 = stored(w3);
    for (int64_t m : {int64_t{1}, int64_t{8}, cpu::kFewRowsBf16, cpu::kFewRowsBf16 + 1}) {
      const Tensor x = random_rows(m, k, 13, 1.0f);
      Tensor o1 = Tensor::empty({m, 70}, DType::F32), o2 = Tensor::empty({m, 129}, DType::F32);
      Tensor o3 = Tensor::empty({m, 5}, DType::F32);
      const ops::LinearOut parts[] = {{&s1, &b1, &o1, true}, {&s2, nullptr, &o2}, {&s3, &b3, &o3}};
      ops::linear_same_input(x, parts, ct);
      for (const ops::LinearOut& p : parts) {
        Tensor want = Tensor::empty(p.out->shape(), DType::F32);
        ops::linear(x, *p.w, p.bias, want, ct, p.relu);
        EXPECT_EQ(std::memcmp(p.out->raw(), want.raw(), want.nbytes()), 0)
            << m << " rows, " << p.w->dim(0) << " outputs, compute " << static_cast<int>(ct);
      }
    }
  }
}

TEST(LinearSameInput, NamesAPartThatDoesNotFit) {
  const Tensor x = random_rows(4, 64, 14, 1.0f);
  const Tensor w = to_bf16_tensor(random_rows(32, 64, 15, 0.05f));
  const Tensor narrow = to_bf16_tensor(random_rows(32, 63, 16, 0.05f));
  Tensor out = Tensor::empty({4, 32}, DType::F32), other = Tensor::empty({4, 32}, DType::F32);
  const ops::LinearOut parts[] = {{&w, nullptr, &out}, {&narrow, nullptr, &other}};
  try {
    ops::linear_same_input(x, parts, ops::ComputeType::BF16);
    FAIL() << "a weight of 63 columns took an input of 64";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("[32, 63]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace h2oflex
