// Prefill attention with bf16 products (ops::attention_prefill at ComputeType::BF16) against a
// reference in double that rounds what the kernel is meant to round: q, k and v, and the
// probabilities before they weight v. The softmax and H2O's column sums stay f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

Tensor normal_f32(Shape shape, uint32_t seed) {
  Tensor t = Tensor::empty(std::move(shape), DType::F32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (float& x : t.span<float>()) x = n(rng);
  return t;
}

double round_bf16(double x) {
  return bf16_to_f32(f32_to_bf16(static_cast<float>(x)));
}

struct Want {
  std::vector<double> out, colsum;
  std::vector<double>
      bound;  // per output value: Σ_j p_j |v_j|, what a probability's rounding scales
};

Want reference(const Tensor& q, const Tensor& k, const Tensor& v, const std::vector<int32_t>& pad,
               double scale) {
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3), kvh = k.dim(2);
  Want w;
  w.out.assign(static_cast<size_t>(q.numel()), 0.0);
  w.bound = w.out;
  w.colsum.assign(static_cast<size_t>(b * kvh * s), 0.0);
  const auto at = [&](const Tensor& t, int64_t bi, int64_t pos, int64_t head, int64_t i) {
    return round_bf16(t.data<float>()[((bi * s + pos) * t.dim(2) + head) * d + i]);
  };
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hq = 0; hq < h; ++hq) {
      const int64_t g = hq / (h / kvh);
      for (int64_t i = pad[bi]; i < s; ++i) {
        std::vector<double> logit(static_cast<size_t>(s));
        double mx = -1e300, z = 0;
        for (int64_t j = pad[bi]; j <= i; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < d; ++t) dot += at(q, bi, i, hq, t) * at(k, bi, j, g, t);
          logit[j] = dot * scale;
          mx = std::max(mx, logit[j]);
        }
        for (int64_t j = pad[bi]; j <= i; ++j) z += std::exp(logit[j] - mx);
        const size_t row = static_cast<size_t>(((bi * s + i) * h + hq) * d);
        for (int64_t j = pad[bi]; j <= i; ++j) {
          const double p = std::exp(logit[j] - mx) / z;
          w.colsum[(bi * kvh + g) * s + j] += p;
          for (int64_t t = 0; t < d; ++t) {
            w.out[row + t] += round_bf16(p) * at(v, bi, j, g, t);
            w.bound[row + t] += p * std::abs(at(v, bi, j, g, t));
          }
        }
      }
    }
  }
  return w;
}

// Worst |got - want| less the allowance, over all values (<= 0 when every value is within it).
// The allowance: a probability computed in f32 may round to the other neighbouring bf16 value
// than the exact one does (one ulp, at most 2^-7 of it), plus f32 sums.
double worst_excess(const Tensor& out, const Want& w) {
  double worst = -1;
  for (size_t i = 0; i < w.out.size(); ++i) {
    const double allowed = std::ldexp(w.bound[i], -7) + 1e-5 * (1 + std::abs(w.out[i]));
    worst = std::max(worst, std::abs(out.data<float>()[i] - w.out[i]) - allowed);
  }
  return worst;
}

double max_rel_error(const Tensor& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(got.data<float>()[i] - want[i]) / std::max(1.0, want[i]));
  }
  return worst;
}

// Several blocks of queries, pads that end inside a block, a sequence that is all padding but its
// last position, grouped and plain heads. Head sizes 64 and 128 take the AVX512-BF16 kernel on a
// CPU that has it (prefill_head_avx512_bf16.cc), 16 and 32 the library's bf16 matmul.
TEST(AttentionPrefillBf16, RoundsInputsAndProbabilitiesAndKeepsF32ColumnSums) {
  const int64_t b = 3, s = 150, h = 4;
  const std::vector<int32_t> pad = {0, 21, 149};
  for (const int64_t d : {16, 32, 64, 128}) {
    for (const int64_t kvh : {4, 2}) {
      const Tensor q = normal_f32({b, s, h, d}, 60), k = normal_f32({b, s, kvh, d}, 61);
      const Tensor v = normal_f32({b, s, kvh, d}, 62);
      const float scale = 1.0f / std::sqrt(static_cast<float>(d));
      Tensor out = Tensor::zeros({b, s, h, d}, DType::F32);
      Tensor colsum = Tensor::zeros({b, kvh, s}, DType::F32);
      ops::attention_prefill(q, k, v, pad, scale, out, &colsum, ops::ComputeType::BF16);
      Tensor f32_out = Tensor::zeros({b, s, h, d}, DType::F32);
      Tensor f32_colsum = Tensor::zeros({b, kvh, s}, DType::F32);
      ops::attention_prefill(q, k, v, pad, scale, f32_out, &f32_colsum, ops::ComputeType::F32);
      if (!cpu::gemm_has_kernel(ops::ComputeType::BF16)) {
        // Without the library's bf16 matmul the products stay f32: the same bits as F32.
        for (int64_t i = 0; i < out.numel(); ++i) {
          ASSERT_EQ(out.data<float>()[i], f32_out.data<float>()[i]) << i;
        }
        continue;
      }
      const Want want = reference(q, k, v, pad, scale);
      EXPECT_LE(worst_excess(out, want), 0.0) << "d " << d << ", kv heads " << kvh;
      EXPECT_LE(max_rel_error(colsum, want.colsum), 2e-5) << "d " << d << ", kv heads " << kvh;
      // The rounding is visible at these tolerances: f32 products miss the rounded reference.
      EXPECT_GT(max_rel_error(f32_colsum, want.colsum), 2e-4) << "d " << d;
      for (int64_t i = 0; i < pad[1] * h * d; ++i) {  // padding rows of sequence 1 are zeros
        ASSERT_EQ(out.data<float>()[(s * h * d) + i], 0.0f) << i;
      }
    }
  }
}

}  // namespace
}  // namespace h2oflex
