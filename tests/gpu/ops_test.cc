// Every CUDA op against its CPU twin (h2oflex::cpu) on random inputs: normalized error bounds
// per dtype for arithmetic, exact equality for ids, copies and H2O keep / evict choices.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

using gpu_test::normalized_error;
using gpu_test::random_tensor;
using gpu_test::tolerance;

Tensor dev(const Tensor& t) {
  return cuda::to_device(t);
}
Tensor host(const Tensor& t) {
  return cuda::to_host(t);
}

Tensor int_tensor(Shape shape, const std::vector<int32_t>& values) {
  Tensor t = Tensor::empty(std::move(shape), DType::I32);
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  std::copy(values.begin(), values.end(), t.data<int32_t>());
  return t;
}

struct LinearCase {
  DType weight;
  ops::ComputeType ct;      // given to the CUDA op
  ops::ComputeType cpu_ct;  // given to the CPU oracle
  DType arithmetic;         // sets the tolerance
};

std::string linear_case_label(const LinearCase& c) {
  const char* compute = c.ct == ops::ComputeType::F32    ? "f32"
                        : c.ct == ops::ComputeType::BF16 ? "bf16"
                                                         : "f16";
  return "w_" + gpu_test::dtype_label(c.weight) + "_compute_" + compute;
}

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, MatchesCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const LinearCase c = GetParam();
  for (const auto& [m, k, n] : {std::tuple{7, 96, 40}, std::tuple{1, 256, 130}}) {
    for (int variant = 0; variant < 3; ++variant) {  // plain, +bias, +bias+ReLU
      const bool with_bias = variant >= 1, relu = variant == 2;
      Tensor x = random_tensor({m, k}, DType::F32, 10 + variant);
      Tensor w = random_tensor({n, k}, c.weight, 20 + variant, 0.1f);
      Tensor bias = random_tensor({n}, DType::F32, 30 + variant);
      Tensor want = Tensor::zeros({m, n}, DType::F32);
      cpu::linear(x, w, with_bias ? &bias : nullptr, want, c.cpu_ct, relu);

      Tensor dx = dev(x), dw = dev(w), dbias = dev(bias);
      Tensor dout = cuda::device_zeros({m, n}, DType::F32);
      cuda::linear(dx, dw, with_bias ? &dbias : nullptr, dout, c.ct, relu);
      EXPECT_LE(normalized_error(host(dout), want), tolerance(c.arithmetic))
          << "m=" << m << " k=" << k << " n=" << n << " variant " << variant;
    }
  }
}

// Converted operands taken a few rows at a time (pieces of 3 rows, so the last is partial): every
// piece lands where it belongs, for converted inputs, converted weights and both.
TEST_P(LinearTest, InPiecesMatchesCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const LinearCase c = GetParam();
  const int64_t m = 37, k = 96, n = 29;
  Tensor x = random_tensor({m, k}, DType::F32, 40);
  Tensor w = random_tensor({n, k}, c.weight, 41, 0.1f);
  Tensor bias = random_tensor({n}, DType::F32, 42);
  Tensor want = Tensor::zeros({m, n}, DType::F32);
  cpu::linear(x, w, &bias, want, c.cpu_ct, /*relu=*/true);
  const size_t op_size = c.ct == ops::ComputeType::F32 ? 4 : 2;
  Tensor dbias = dev(bias);
  Tensor dout = cuda::device_zeros({m, n}, DType::F32);
  cuda::detail::linear_in_pieces(dev(x), dev(w), &dbias, dout, c.ct, /*relu=*/true,
                                 3 * k * op_size);
  EXPECT_LE(normalized_error(host(dout), want), tolerance(c.arithmetic));
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, LinearTest,
    ::testing::Values(
        LinearCase{DType::F32, ops::ComputeType::F32, ops::ComputeType::F32, DType::F32},
        // oneDNN has no f16 GEMM on most CPUs: the oracle is the fp32 product of the same f16
        // weights, and the bound covers rounding x to f16.
        LinearCase{DType::F16, ops::ComputeType::F16, ops::ComputeType::F32, DType::F16},
        LinearCase{DType::BF16, ops::ComputeType::BF16, ops::ComputeType::BF16, DType::BF16},
        LinearCase{DType::BF16, ops::ComputeType::F32, ops::ComputeType::F32, DType::F32},
        LinearCase{DType::F16, ops::ComputeType::F32, ops::ComputeType::F32, DType::F32}),
    [](const auto& info) { return linear_case_label(info.param); });

TEST(CudaOps, DispatcherRoutesDeviceTensorsToCuda) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  Tensor x = random_tensor({3, 16}, DType::F32, 1);
  Tensor w = random_tensor({8, 16}, DType::F32, 2);
  Tensor want = Tensor::zeros({3, 8}, DType::F32);
  cpu::linear(x, w, nullptr, want, ops::ComputeType::F32);
  Tensor dx = dev(x), dw = dev(w);
  Tensor dout = cuda::device_zeros({3, 8}, DType::F32);
  ops::linear(dx, dw, nullptr, dout, ops::ComputeType::F32);
  EXPECT_LE(normalized_error(host(dout), want), 1e-5);
}

TEST(CudaOps, LayerNormMatchesCpuAndWorksInPlace) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (int64_t dim : {64, 1000, 4096}) {
    Tensor x = random_tensor({5, dim}, DType::F32, 3, 3.0f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += 10.0f;  // mean far from 0
    Tensor gamma = random_tensor({dim}, DType::F32, 4);
    Tensor beta = random_tensor({dim}, DType::F32, 5);
    Tensor want = Tensor::zeros({5, dim}, DType::F32);
    cpu::layer_norm(x, gamma, beta, 1e-5f, want);
    Tensor dx = dev(x), dg = dev(gamma), db = dev(beta);
    Tensor dout = cuda::device_zeros({5, dim}, DType::F32);
    cuda::layer_norm(dx, dg, db, 1e-5f, dout);
    EXPECT_LE(normalized_error(host(dout), want), 1e-5) << dim;
    cuda::layer_norm(dx, dg, db, 1e-5f, dx);  // out aliases x
    EXPECT_LE(normalized_error(host(dx), want), 1e-5) << dim;
  }
}

TEST(CudaOps, RmsNormMatchesCpuAndWorksInPlace) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (int64_t dim : {64, 1000, 4096}) {
    Tensor x = random_tensor({5, dim}, DType::F32, 40, 3.0f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] += 1.0f;
    Tensor gamma = random_tensor({dim}, DType::F32, 41);
    Tensor want = Tensor::zeros({5, dim}, DType::F32);
    cpu::rms_norm(x, gamma, 1e-6f, want);
    Tensor dx = dev(x), dg = dev(gamma);
    Tensor dout = cuda::device_zeros({5, dim}, DType::F32);
    cuda::rms_norm(dx, dg, 1e-6f, dout);
    EXPECT_LE(normalized_error(host(dout), want), 1e-5) << dim;
    ops::rms_norm(dx, dg, 1e-6f, dx);  // out aliases x, through the dispatcher
    EXPECT_LE(normalized_error(host(dx), want), 1e-5) << dim;
  }
}

TEST(CudaOps, RotaryEmbeddingMatchesCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 37, heads = 5, head_dim = 64;
  std::vector<int32_t> pos(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) pos[r] = r % 6 == 2 ? -1 : static_cast<int32_t>(r * 113);
  const Tensor positions = int_tensor({rows}, pos);  // up to 4068, where __cosf would be off
  for (int64_t rot_dim : {64, 16}) {                 // full and GPT-NeoX's partial rotary
    Tensor inv_freq = Tensor::empty({rot_dim / 2}, DType::F32);
    for (int64_t i = 0; i < rot_dim / 2; ++i) {
      inv_freq.data<float>()[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / rot_dim));
    }
    const Tensor x = random_tensor({rows, heads * head_dim}, DType::F32, 42);
    Tensor want = x.clone();
    cpu::rotary_embedding(want, positions, heads, rot_dim, inv_freq);
    Tensor dx = dev(x);
    cuda::rotary_embedding(dx, dev(positions), heads, rot_dim, dev(inv_freq));
    const Tensor got = host(dx);
    EXPECT_LE(normalized_error(got, want), 1e-6) << rot_dim;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < heads * head_dim; ++i) {
        const int64_t at = r * heads * head_dim + i;
        if (pos[r] < 0 || i % head_dim >= rot_dim) {  // padding rows and unrotated dims: as given
          ASSERT_EQ(got.data<float>()[at], x.data<float>()[at]) << "row " << r << " dim " << i;
        }
      }
    }
  }
}

TEST(CudaOps, SiluMulAndGeluMatchCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  Tensor gate = random_tensor({9, 1001}, DType::F32, 43, 4.0f);
  gate.data<float>()[0] = 95.0f;
  gate.data<float>()[1] = -95.0f;
  const Tensor up = random_tensor({9, 1001}, DType::F32, 44);
  Tensor want = Tensor::zeros(gate.shape(), DType::F32);
  cpu::silu_mul(gate, up, want);
  Tensor dgate = dev(gate), dup = dev(up);
  Tensor dout = cuda::device_zeros(gate.shape(), DType::F32);
  cuda::silu_mul(dgate, dup, dout);
  EXPECT_LE(normalized_error(host(dout), want), 1e-6);
  ops::silu_mul(dgate, dup, dgate);  // out aliases gate
  EXPECT_LE(normalized_error(host(dgate), want), 1e-6);

  Tensor x = random_tensor({7, 2049}, DType::F32, 45, 3.0f);
  Tensor dx = dev(x);
  cpu::gelu(x);
  cuda::gelu(dx);
  EXPECT_LE(normalized_error(host(dx), x), 1e-6);
}

TEST(CudaOps, SplitQkvHeadsMatchesCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 11, heads = 6, d = 40;
  const Tensor qkv = random_tensor({rows, heads * 3 * d}, DType::F32, 46);
  Tensor q = Tensor::zeros({rows, heads * d}, DType::F32), k = q.clone(), v = q.clone();
  cpu::split_qkv_heads(qkv, heads, q, k, v);
  Tensor dq = cuda::device_zeros({rows, heads * d}, DType::F32);
  Tensor dk = cuda::device_zeros({rows, heads * d}, DType::F32);
  Tensor dv = cuda::device_zeros({rows, heads * d}, DType::F32);
  ops::split_qkv_heads(dev(qkv), heads, dq, dk, dv);
  for (const auto& [got, want] : {std::pair{&dq, &q}, std::pair{&dk, &k}, std::pair{&dv, &v}}) {
    const Tensor h = host(*got);
    ASSERT_TRUE(
        std::equal(h.span<float>().begin(), h.span<float>().end(), want->span<float>().begin()));
  }
}

TEST(CudaOps, BiasReluAndResidualAddMatchCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (bool relu : {false, true}) {
    Tensor x = random_tensor({9, 77}, DType::F32, 6);
    Tensor bias = random_tensor({77}, DType::F32, 7);
    Tensor dx = dev(x), dbias = dev(bias);
    cpu::add_bias_relu(x, bias, relu);
    cuda::add_bias_relu(dx, dbias, relu);
    EXPECT_LE(normalized_error(host(dx), x), 1e-6) << relu;
  }
  Tensor x = random_tensor({9, 77}, DType::F32, 8);
  Tensor y = random_tensor({9, 77}, DType::F32, 9);
  Tensor dx = dev(x), dy = dev(y);
  cpu::add_inplace(x, y);
  cuda::add_inplace(dx, dy);
  EXPECT_LE(normalized_error(host(dx), x), 1e-6);
}

class EmbeddingTest : public ::testing::TestWithParam<DType> {};

TEST_P(EmbeddingTest, TokensAndPositionsMatchCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const DType dt = GetParam();
  Tensor table = random_tensor({50, 24}, dt, 11);
  Tensor pos_table = random_tensor({34, 24}, dt, 12);
  Tensor ids = int_tensor({2, 3}, {0, 49, 7, 7, 13, 1});
  Tensor positions = int_tensor({2, 3}, {0, 1, 2, 29, 30, 31});
  Tensor want = Tensor::zeros({6, 24}, DType::F32);
  cpu::embed_tokens(ids, table, want);
  cpu::add_positions(want, positions, pos_table, 2);
  Tensor dout = cuda::device_zeros({6, 24}, DType::F32);
  Tensor dtable = dev(table), dpos_table = dev(pos_table), dids = dev(ids), dpos = dev(positions);
  cuda::embed_tokens(dids, dtable, dout);
  cuda::add_positions(dout, dpos, dpos_table, 2);
  // Both sides widen the same stored values: the results agree to fp32 rounding.
  EXPECT_LE(normalized_error(host(dout), want), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, EmbeddingTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return gpu_test::dtype_label(info.param); });

TEST(CudaOps, PrefillAttentionAndColumnSumsMatchCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (const auto& [s, d] : {std::pair{37, 64}, std::pair{130, 80}}) {
    const int64_t b = 3, h = 4;
    const std::vector<int32_t> pad = {0, 5, static_cast<int32_t>(s - 1)};
    Tensor q = random_tensor({b, s, h, d}, DType::F32, 13);
    Tensor k = random_tensor({b, s, h, d}, DType::F32, 14);
    Tensor v = random_tensor({b, s, h, d}, DType::F32, 15);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    Tensor want = Tensor::zeros({b, s, h, d}, DType::F32);
    Tensor want_col = Tensor::zeros({b, h, s}, DType::F32);
    cpu::attention_prefill(q, k, v, pad, scale, want, &want_col, ops::ComputeType::F32);

    Tensor dq = dev(q), dk = dev(k), dv = dev(v);
    Tensor dout = cuda::device_zeros({b, s, h, d}, DType::F32);
    Tensor dcol = cuda::device_zeros({b, h, s}, DType::F32);
    cuda::attention_prefill(dq, dk, dv, pad, scale, dout, &dcol, ops::ComputeType::F32);
    Tensor out = host(dout), col = host(dcol);
    EXPECT_LE(normalized_error(out, want), 1e-5) << "s=" << s;
    EXPECT_LE(normalized_error(col, want_col), 1e-5) << "s=" << s;
    // Padding rows are zero and padding keys score zero on the device too.
    for (int64_t j = 0; j < pad[1]; ++j) {
      EXPECT_EQ(col.data<float>()[(1 * h + 2) * s + j], 0.0f);
      EXPECT_EQ(out.data<float>()[((1 * s + j) * h + 2) * d + 3], 0.0f);
    }
    // Without column sums the output is the same.
    Tensor dout2 = cuda::device_zeros({b, s, h, d}, DType::F32);
    cuda::attention_prefill(dq, dk, dv, pad, scale, dout2, nullptr, ops::ComputeType::F32);
    EXPECT_LE(normalized_error(host(dout2), want), 1e-5);
  }
}

class DecodeTest : public ::testing::TestWithParam<DType> {};

TEST_P(DecodeTest, MatchesCpuAndIgnoresEmptySlots) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const DType dt = GetParam();
  const int64_t b = 2, h = 3, cap = 50, d = 64;
  Tensor q = random_tensor({b, h, d}, DType::F32, 16);
  Tensor k_new = random_tensor({b, h, d}, DType::F32, 17);
  Tensor v_new = random_tensor({b, h, d}, DType::F32, 18);
  Tensor kf = random_tensor({b, h, cap, d}, DType::F32, 19);
  Tensor vf = random_tensor({b, h, cap, d}, DType::F32, 20);
  std::vector<int32_t> pos(static_cast<size_t>(b * h * cap));
  for (size_t i = 0; i < pos.size(); ++i) {
    const bool empty = (i % 7 == 3) || (i / cap == 4 && i % cap >= 10);  // one head nearly empty
    pos[i] = empty ? -1 : static_cast<int32_t>(i % cap * 2);
    if (empty) {  // garbage in empty slots must not reach the result
      for (int64_t t = 0; t < d; ++t) {
        kf.data<float>()[i * d + t] = std::numeric_limits<float>::quiet_NaN();
        vf.data<float>()[i * d + t] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  Tensor k_cache = dt == DType::F32 ? kf : to_dtype(kf, dt);
  Tensor v_cache = dt == DType::F32 ? vf : to_dtype(vf, dt);
  Tensor slot_pos = int_tensor({b, h, cap}, pos);
  const float scale = 0.125f;
  Tensor want = Tensor::zeros({b, h, d}, DType::F32);
  Tensor want_probs = Tensor::zeros({b, h, cap}, DType::F32);
  Tensor want_new = Tensor::zeros({b, h}, DType::F32);
  cpu::attention_decode(q, k_cache, v_cache, slot_pos, k_new, v_new, scale, want, &want_probs,
                        &want_new);

  Tensor dout = cuda::device_zeros({b, h, d}, DType::F32);
  Tensor dprobs = cuda::device_zeros({b, h, cap}, DType::F32);
  Tensor dnew = cuda::device_zeros({b, h}, DType::F32);
  Tensor dq = dev(q), dkc = dev(k_cache), dvc = dev(v_cache), dpos = dev(slot_pos);
  Tensor dkn = dev(k_new), dvn = dev(v_new);
  cuda::attention_decode(dq, dkc, dvc, dpos, dkn, dvn, scale, dout, &dprobs, &dnew);
  // Both sides read the same stored cache values, so fp32 accuracy applies to every dtype.
  EXPECT_LE(normalized_error(host(dout), want), 1e-5);
  Tensor probs = host(dprobs);
  EXPECT_LE(normalized_error(probs, want_probs), 1e-5);
  EXPECT_LE(normalized_error(host(dnew), want_new), 1e-5);
  for (size_t i = 0; i < pos.size(); ++i) {
    if (pos[i] < 0) {
      EXPECT_EQ(probs.data<float>()[i], 0.0f) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DecodeTest, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return gpu_test::dtype_label(info.param); });

// Grouped-query prefill: outputs and per-KV-head column sums against the CPU, and H2O's prompt
// selection from each backend's sums keeps the same tokens.
TEST(CudaOps, GroupedQueryPrefillMatchesCpuAndKeepsTheCpuSet) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (const auto& [s, kvh] : {std::pair{37, 2}, std::pair{130, 1}, std::pair{64, 4}}) {
    const int64_t b = 3, h = 8, d = 64;
    const std::vector<int32_t> pad = {0, 5, static_cast<int32_t>(s - 1)};
    Tensor q = random_tensor({b, s, h, d}, DType::F32, 47);
    Tensor k = random_tensor({b, s, kvh, d}, DType::F32, 48);
    Tensor v = random_tensor({b, s, kvh, d}, DType::F32, 49);
    const float scale = 0.125f;
    Tensor want = Tensor::zeros({b, s, h, d}, DType::F32);
    Tensor want_col = Tensor::zeros({b, kvh, s}, DType::F32);
    cpu::attention_prefill(q, k, v, pad, scale, want, &want_col, ops::ComputeType::F32);
    Tensor dout = cuda::device_zeros({b, s, h, d}, DType::F32);
    Tensor dcol = cuda::device_zeros({b, kvh, s}, DType::F32);
    ops::attention_prefill(dev(q), dev(k), dev(v), pad, scale, dout, &dcol, ops::ComputeType::F32);
    const std::string label = "s=" + std::to_string(s) + " kv heads " + std::to_string(kvh);
    EXPECT_LE(normalized_error(host(dout), want), 1e-5) << label;
    const Tensor col = host(dcol);
    EXPECT_LE(normalized_error(col, want_col), 1e-5) << label;
    for (int64_t j = 0; j < pad[1]; ++j) EXPECT_EQ(col.data<float>()[(1 * kvh + 0) * s + j], 0.0f);
    const int heavy = 6, recent = 4;
    Tensor keep = Tensor::zeros({b, kvh, heavy + recent}, DType::I32);
    cpu::select_heavy_recent(want_col, pad, heavy, recent, keep);
    Tensor dkeep = cuda::device_zeros({b, kvh, heavy + recent}, DType::I32);
    cuda::select_heavy_recent(dcol, pad, heavy, recent, dkeep);
    const Tensor got_keep = host(dkeep);
    EXPECT_TRUE(std::equal(keep.span<int32_t>().begin(), keep.span<int32_t>().end(),
                           got_keep.span<int32_t>().begin()))
        << label;
  }
}

class GroupedDecodeTest : public ::testing::TestWithParam<DType> {};

// Grouped-query decode: outputs, per-KV-head slot and new-token probabilities against the CPU, and
// the H2O victim chosen from each backend's probabilities is the same slot.
TEST_P(GroupedDecodeTest, MatchesCpuAndEvictsTheCpuVictim) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const DType dt = GetParam();
  const int64_t b = 3, h = 8, kvh = 2, cap = 70, d = 64;
  Tensor q = random_tensor({b, h, d}, DType::F32, 50);
  Tensor k_new = random_tensor({b, kvh, d}, DType::F32, 51);
  Tensor v_new = random_tensor({b, kvh, d}, DType::F32, 52);
  Tensor kf = random_tensor({b, kvh, cap, d}, DType::F32, 53);
  Tensor vf = random_tensor({b, kvh, cap, d}, DType::F32, 54);
  std::vector<int32_t> pos(static_cast<size_t>(b * kvh * cap));
  for (size_t i = 0; i < pos.size(); ++i) {
    const bool empty = i % 5 == 1;
    pos[i] = empty ? -1 : static_cast<int32_t>(i % cap);
    if (empty) {
      for (int64_t t = 0; t < d; ++t) {
        kf.data<float>()[i * d + t] = std::numeric_limits<float>::quiet_NaN();
        vf.data<float>()[i * d + t] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  Tensor k_cache = dt == DType::F32 ? kf : to_dtype(kf, dt);
  Tensor v_cache = dt == DType::F32 ? vf : to_dtype(vf, dt);
  Tensor slot_pos = int_tensor({b, kvh, cap}, pos);
  const float scale = 0.125f;
  Tensor want = Tensor::zeros({b, h, d}, DType::F32);
  Tensor want_probs = Tensor::zeros({b, kvh, cap}, DType::F32);
  Tensor want_new = Tensor::zeros({b, kvh}, DType::F32);
  cpu::attention_decode(q, k_cache, v_cache, slot_pos, k_new, v_new, scale, want, &want_probs,
                        &want_new);
  Tensor dout = cuda::device_zeros({b, h, d}, DType::F32);
  Tensor dprobs = cuda::device_zeros({b, kvh, cap}, DType::F32);
  Tensor dnew = cuda::device_zeros({b, kvh}, DType::F32);
  Tensor dpos = dev(slot_pos);
  ops::attention_decode(dev(q), dev(k_cache), dev(v_cache), dpos, dev(k_new), dev(v_new), scale,
                        dout, &dprobs, &dnew);
  EXPECT_LE(normalized_error(host(dout), want), 1e-5);
  const Tensor probs = host(dprobs);
  EXPECT_LE(normalized_error(probs, want_probs), 1e-5);
  EXPECT_LE(normalized_error(host(dnew), want_new), 1e-5);
  for (size_t i = 0; i < pos.size(); ++i) {
    if (pos[i] < 0) {
      ASSERT_EQ(probs.data<float>()[i], 0.0f) << i;
    }
  }
  // Without the optional outputs the attention is the same.
  Tensor dout2 = cuda::device_zeros({b, h, d}, DType::F32);
  ops::attention_decode(dev(q), dev(k_cache), dev(v_cache), dpos, dev(k_new), dev(v_new), scale,
                        dout2, nullptr, nullptr);
  EXPECT_LE(normalized_error(host(dout2), want), 1e-5);
  const std::vector<int32_t> protect_from(static_cast<size_t>(b), static_cast<int32_t>(cap - 5));
  Tensor victim = Tensor::zeros({b, kvh}, DType::I32);
  cpu::evict_lowest_score(want_probs, slot_pos, protect_from, victim);
  Tensor dvictim = cuda::device_zeros({b, kvh}, DType::I32);
  cuda::evict_lowest_score(dprobs, dpos, protect_from, dvictim);
  const Tensor got_victim = host(dvictim);
  for (int64_t i = 0; i < b * kvh; ++i) {
    EXPECT_EQ(got_victim.data<int32_t>()[i], victim.data<int32_t>()[i]) << i;
    EXPECT_GE(victim.data<int32_t>()[i], 0) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GroupedDecodeTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return gpu_test::dtype_label(info.param); });

TEST(CudaOps, ArgmaxMatchesCpuIncludingTies) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 6, vocab = 5000;
  Tensor logits = random_tensor({rows, vocab}, DType::F32, 21);
  float* l = logits.data<float>();
  l[0 * vocab + 4000] = l[0 * vocab + 17] = 50.0f;  // tie: the lower id wins
  l[1 * vocab + vocab - 1] = 60.0f;
  for (int64_t i = 0; i < vocab; ++i) l[2 * vocab + i] = -1.0f;  // all equal: id 0
  l[3 * vocab + 0] = 70.0f;
  std::vector<int32_t> want, got;
  cpu::argmax(logits, want);
  cuda::argmax(dev(logits), got);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got[0], 17);
  EXPECT_EQ(got[2], 0);
}

// The CPU sampler's choice order in fp64: where the draw lands relative to the prefix sums.
struct SampleOracle {
  std::vector<int32_t> order;  // ids by descending probability
  std::vector<double> prefix;  // normalized prefix mass
  double target = 0;           // u * nucleus mass
};

SampleOracle sample_oracle(const float* l, int64_t n, const ops::SampleParams& p, uint64_t key,
                           uint64_t step) {
  SampleOracle o;
  const float mx = *std::max_element(l, l + n);
  std::vector<double> prob(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += prob[i] = std::exp((double(l[i]) - mx) / p.temperature);
  o.order.resize(static_cast<size_t>(n));
  std::iota(o.order.begin(), o.order.end(), 0);
  std::stable_sort(o.order.begin(), o.order.end(),
                   [&](int32_t a, int32_t b) { return prob[a] > prob[b]; });
  double acc = 0, kept = -1;
  for (int64_t i = 0; i < n; ++i) {
    acc += prob[o.order[i]] / sum;
    o.prefix.push_back(acc);
    if (kept < 0 && acc >= p.top_p) kept = acc;
  }
  if (kept < 0) kept = acc;
  o.target = uniform_open01(philox4x32(p.seed, key, step)[0]) * kept;
  return o;
}

TEST(CudaOps, SampleMatchesCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 300, vocab = 1003;  // more rows than one sort pass takes
  Tensor logits = random_tensor({rows, vocab}, DType::F32, 22, 2.0f);
  std::vector<uint64_t> keys(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) keys[r] = 1000 + 17 * r;
  Tensor dlogits = dev(logits);
  for (const auto& [temperature, top_p] :
       {std::pair{1.0f, 1.0f}, std::pair{0.7f, 0.9f}, std::pair{1.3f, 0.3f}}) {
    ops::SampleParams p;
    p.temperature = temperature;
    p.top_p = top_p;
    p.seed = 77;
    std::vector<int32_t> want, got;
    cpu::sample(logits, p, keys, 5, want);
    cuda::sample(dlogits, p, keys, 5, got);
    ASSERT_EQ(got.size(), want.size());
    int near_boundary = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (got[r] == want[r]) continue;
      // fp32 exp differs by an ulp between libm and CUDA: a different id is acceptable only if
      // the two are neighbours in the order and the draw lies on their common boundary.
      const SampleOracle o = sample_oracle(logits.data<float>() + r * vocab, vocab, p, keys[r], 5);
      const auto rank = [&](int32_t id) {
        return std::find(o.order.begin(), o.order.end(), id) - o.order.begin();
      };
      const int64_t a = rank(got[r]), c = rank(want[r]);
      ASSERT_EQ(std::abs(a - c), 1) << "row " << r << ": " << got[r] << " vs " << want[r];
      EXPECT_NEAR(o.prefix[std::min(a, c)], o.target, 1e-5) << "row " << r;
      ++near_boundary;
    }
    EXPECT_LE(near_boundary, 2) << "T=" << temperature << " top_p=" << top_p;
  }
}

TEST(CudaOps, SelectHeavyRecentKeepsTheCpuSet) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 4, h = 3, s = 40;
  Tensor colsum = random_tensor({b, h, s}, DType::F32, 23);
  for (int64_t i = 0; i < colsum.numel(); ++i) {  // few distinct values: many ties
    colsum.data<float>()[i] = std::round(colsum.data<float>()[i] * 2.0f) / 2.0f;
  }
  const std::vector<int32_t> pad = {0, 3, 32, 39};  // the last two fit in the budget
  for (const auto& [heavy, recent] : {std::pair{5, 3}, std::pair{0, 4}, std::pair{12, 1}}) {
    Tensor want = Tensor::zeros({b, h, heavy + recent}, DType::I32);
    cpu::select_heavy_recent(colsum, pad, heavy, recent, want);
    Tensor dkeep = cuda::device_zeros({b, h, heavy + recent}, DType::I32);
    cuda::select_heavy_recent(dev(colsum), pad, heavy, recent, dkeep);
    Tensor got = host(dkeep);
    for (int64_t i = 0; i < want.numel(); ++i) {
      ASSERT_EQ(got.data<int32_t>()[i], want.data<int32_t>()[i])
          << "heavy " << heavy << " recent " << recent << " at " << i;
    }
  }
}

TEST(CudaOps, SelectHeavyRecentLongPrompt) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 2, h = 2, s = 1500;  // not a power of two; sort spans 2048 entries
  Tensor colsum = random_tensor({b, h, s}, DType::F32, 24);
  const std::vector<int32_t> pad = {0, 100};
  Tensor want = Tensor::zeros({b, h, 300}, DType::I32);
  cpu::select_heavy_recent(colsum, pad, 150, 150, want);
  Tensor dkeep = cuda::device_zeros({b, h, 300}, DType::I32);
  cuda::select_heavy_recent(dev(colsum), pad, 150, 150, dkeep);
  Tensor got = host(dkeep);
  EXPECT_TRUE(std::equal(want.span<int32_t>().begin(), want.span<int32_t>().end(),
                         got.span<int32_t>().begin()));
}

TEST(CudaOps, EvictLowestScorePicksTheCpuVictim) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 5, h = 4, cap = 300;
  Tensor scores = random_tensor({b, h, cap}, DType::F32, 25);
  std::vector<int32_t> pos(static_cast<size_t>(b * h * cap));
  for (int64_t bh = 0; bh < b * h; ++bh) {
    for (int64_t j = 0; j < cap; ++j) {
      // Positions are a permutation per head; every 9th slot is empty.
      pos[bh * cap + j] = j % 9 == 4 ? -1 : static_cast<int32_t>((j * 37 + bh) % cap);
      float& sc = scores.data<float>()[bh * cap + j];
      sc = std::round(sc * 2.0f) / 2.0f;  // ties between scores, resolved by position
    }
  }
  // Sequence 3 protects everything (no victim), sequence 4 only allows positions < 5.
  const std::vector<int32_t> protect_from = {cap - 10, cap, 100, 0, 5};
  Tensor slot_pos = int_tensor({b, h, cap}, pos);
  Tensor want = Tensor::zeros({b, h}, DType::I32);
  cpu::evict_lowest_score(scores, slot_pos, protect_from, want);
  Tensor dvictim = cuda::device_zeros({b, h}, DType::I32);
  cuda::evict_lowest_score(dev(scores), dev(slot_pos), protect_from, dvictim);
  Tensor got = host(dvictim);
  for (int64_t i = 0; i < b * h; ++i) {
    EXPECT_EQ(got.data<int32_t>()[i], want.data<int32_t>()[i]) << i;
  }
  EXPECT_EQ(got.data<int32_t>()[3 * h], -1);
}

// SnapKV's window statistic: the device's pooled window attention is the CPU twin's (to f32
// rounding of the softmax), with padding, grouped heads and windows longer than a sequence.
TEST(CudaOps, WindowAttentionScoresMatchCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 3, s = 300, h = 8, kvh = 2, d = 64;
  Tensor q = random_tensor({b, s, h, d}, DType::F32, 41);
  Tensor k = random_tensor({b, s, kvh, d}, DType::F32, 42);
  const std::vector<int32_t> pad = {0, 17, 290};
  for (const int window : {1, 32, 64}) {
    Tensor want = Tensor::zeros({b, kvh, s}, DType::F32);
    cpu::window_attention_scores(q, k, pad, 0.125f, window, 5, want);
    Tensor got_dev = cuda::device_zeros({b, kvh, s}, DType::F32);
    cuda::window_attention_scores(dev(q), dev(k), pad, 0.125f, window, 5, got_dev);
    EXPECT_LE(normalized_error(host(got_dev), want), 1e-5) << "window " << window;
  }
}

// TOVA's shared scores: the device's head average is the CPU twin's, bit for bit.
TEST(CudaOps, AverageOverHeadsMatchesCpuBitForBit) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (const Shape& shape : {Shape{3, 5, 77}, Shape{1, 1, 9}, Shape{2, 32, 600}}) {
    Tensor scores = random_tensor(shape, DType::F32, 31);
    Tensor d = dev(scores);
    cpu::average_over_heads(scores);
    cuda::average_over_heads(d);
    const Tensor got = host(d);
    for (int64_t i = 0; i < scores.numel(); ++i) {
      ASSERT_EQ(got.data<float>()[i], scores.data<float>()[i]) << shape_str(shape) << " " << i;
    }
  }
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(CudaOps, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
