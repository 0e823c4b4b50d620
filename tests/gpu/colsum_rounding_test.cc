// Prefill column sums add exactly the probabilities the row pass weighted the values with: with
// one-hot values (value j of key j is 1 in dimension j, 0 elsewhere) each output element is one
// probability, bit for bit, so the column sums can be rebuilt from the output. A kernel that
// rounds a probability differently in the column pass (a fused multiply-add, a division instead
// of the row's reciprocal) changes H2O's ranking of near-ties and fails here.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cuda/cuda_ops.h"

namespace h2oflex {
namespace {

using gpu_test::random_tensor;

TEST(CudaPrefillColumnSums, AddTheRowPassProbabilitiesBitForBit) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 2, s = 100, h = 3, d = 128;  // d >= s: one dimension per key
  const std::vector<int32_t> pad = {0, 7};
  Tensor q = random_tensor({b, s, h, d}, DType::F32, 81, 2.0f);
  Tensor k = random_tensor({b, s, h, d}, DType::F32, 82);
  Tensor v = Tensor::zeros({b, s, h, d}, DType::F32);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t j = 0; j < s; ++j) {
      for (int64_t hi = 0; hi < h; ++hi) v.data<float>()[((bi * s + j) * h + hi) * d + j] = 1.0f;
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor dout = cuda::device_zeros({b, s, h, d}, DType::F32);
  Tensor dcol = cuda::device_zeros({b, h, s}, DType::F32);
  cuda::attention_prefill(cuda::to_device(q), cuda::to_device(k), cuda::to_device(v), pad, scale,
                          dout, &dcol, ops::ComputeType::F32);
  const Tensor out = cuda::to_host(dout), col = cuda::to_host(dcol);
  // P[bi, hi, i, j]: row i's probability of key j, as the row pass used it.
  auto prob = [&](int64_t bi, int64_t hi, int64_t i, int64_t j) {
    return out.data<float>()[((bi * s + i) * h + hi) * d + j];
  };
  constexpr int kWarps = 4;  // the column kernel's warps: warp w adds rows j + w, j + w + 4, ...
  int exact = 0;
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < h; ++hi) {
      for (int64_t j = pad[bi]; j < s; ++j) {
        const float got = col.data<float>()[(bi * h + hi) * s + j];
        float rows_sum = 0.0f;  // ascending rows; exact order only matters past kWarps rows
        double reference = 0.0;
        for (int64_t i = j; i < s; ++i) {
          rows_sum += prob(bi, hi, i, j);
          reference += prob(bi, hi, i, j);
        }
        if (s - j <= kWarps) {
          // One row per warp: the kernel adds the very same floats in the same order.
          ASSERT_EQ(got, rows_sum) << "sequence " << bi << " head " << hi << " key " << j;
          ++exact;
        } else {
          EXPECT_NEAR(got, reference, 1e-6 * std::max(1.0, reference))
              << "sequence " << bi << " head " << hi << " key " << j;
        }
      }
    }
  }
  EXPECT_EQ(exact, b * h * kWarps);
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(CudaPrefillColumnSums, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
