// The CUDA ops at the sizes the small op tests never reach, against their CPU twins: a layer's
// attention, selection, eviction and a projection at OPT-30B's shapes (56 heads of 128, prompt
// 512, batch 32); more sequences than one launch's per-sequence table holds (512); and kernels
// whose shared memory goes past the 48 KiB a launch gets without opting in.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cpu/cpu_ops.h"
#include "runtime/cuda/cuda_ops.h"

namespace h2oflex {
namespace {

using gpu_test::normalized_error;
using gpu_test::random_tensor;
using gpu_test::tolerance;

std::vector<int32_t> host_ints(const Tensor& device) {
  const Tensor h = cuda::to_host(device);
  return {h.data<int32_t>(), h.data<int32_t>() + h.numel()};
}

std::vector<int32_t> ints_of(const Tensor& host) {
  return {host.data<int32_t>(), host.data<int32_t>() + host.numel()};
}

// Left padding of `b` sequences of `s` positions: a spread of lengths, some full.
std::vector<int32_t> spread_padding(int64_t b, int64_t s) {
  std::vector<int32_t> pad(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) pad[i] = static_cast<int32_t>((i * 37) % (s / 2));
  pad[0] = 0;
  return pad;
}

// Prefill attention with column sums, then H2O's prompt selection, on both backends. The device
// selection is compared with the CPU's selection from the device's own column sums (the sums of
// the two backends differ in the last bits, and near-ties may then rank differently).
void expect_prefill_and_selection_match(int64_t b, int64_t s, int64_t h, int64_t d, int heavy,
                                        int recent, const std::string& label) {
  const std::vector<int32_t> pad = spread_padding(b, s);
  Tensor q = random_tensor({b, s, h, d}, DType::F32, 61);
  Tensor k = random_tensor({b, s, h, d}, DType::F32, 62);
  Tensor v = random_tensor({b, s, h, d}, DType::F32, 63);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor want = Tensor::zeros({b, s, h, d}, DType::F32);
  Tensor want_col = Tensor::zeros({b, h, s}, DType::F32);
  cpu::attention_prefill(q, k, v, pad, scale, want, &want_col, ops::ComputeType::F32);

  Tensor dout = cuda::device_zeros({b, s, h, d}, DType::F32);
  Tensor dcol = cuda::device_zeros({b, h, s}, DType::F32);
  cuda::attention_prefill(cuda::to_device(q), cuda::to_device(k), cuda::to_device(v), pad, scale,
                          dout, &dcol, ops::ComputeType::F32);
  EXPECT_LE(normalized_error(cuda::to_host(dout), want), 1e-5) << label;
  const Tensor col = cuda::to_host(dcol);
  EXPECT_LE(normalized_error(col, want_col), 1e-5) << label;
  // The last sequence's padding keys score zero (its padding is the longest of the spread).
  const int64_t last = b - 1;
  for (int64_t j = 0; j < pad[last]; ++j) {
    ASSERT_EQ(col.data<float>()[(last * h + h - 1) * s + j], 0.0f) << label << " key " << j;
  }

  Tensor keep = Tensor::zeros({b, h, heavy + recent}, DType::I32);
  cpu::select_heavy_recent(col, pad, heavy, recent, keep);
  Tensor dkeep = cuda::device_zeros({b, h, heavy + recent}, DType::I32);
  cuda::select_heavy_recent(dcol, pad, heavy, recent, dkeep);
  EXPECT_EQ(host_ints(dkeep), ints_of(keep)) << label;
}

// Decode attention over `cap` slots (some empty), then the H2O victim, on both backends.
void expect_decode_and_eviction_match(int64_t b, int64_t h, int64_t cap, int64_t d,
                                      const std::string& label) {
  Tensor q = random_tensor({b, h, d}, DType::F32, 64);
  Tensor k_new = random_tensor({b, h, d}, DType::F32, 65);
  Tensor v_new = random_tensor({b, h, d}, DType::F32, 66);
  Tensor k_cache = to_dtype(random_tensor({b, h, cap, d}, DType::F32, 67), DType::BF16);
  Tensor v_cache = to_dtype(random_tensor({b, h, cap, d}, DType::F32, 68), DType::BF16);
  Tensor slot_pos = Tensor::empty({b, h, cap}, DType::I32);
  for (int64_t i = 0; i < slot_pos.numel(); ++i) {
    slot_pos.data<int32_t>()[i] = i % 11 == 5 ? -1 : static_cast<int32_t>(i % cap);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor want = Tensor::zeros({b, h, d}, DType::F32);
  Tensor want_probs = Tensor::zeros({b, h, cap}, DType::F32);
  Tensor want_new = Tensor::zeros({b, h}, DType::F32);
  cpu::attention_decode(q, k_cache, v_cache, slot_pos, k_new, v_new, scale, want, &want_probs,
                        &want_new);
  Tensor dout = cuda::device_zeros({b, h, d}, DType::F32);
  Tensor dprobs = cuda::device_zeros({b, h, cap}, DType::F32);
  Tensor dnew = cuda::device_zeros({b, h}, DType::F32);
  const Tensor dpos = cuda::to_device(slot_pos);
  cuda::attention_decode(cuda::to_device(q), cuda::to_device(k_cache), cuda::to_device(v_cache),
                         dpos, cuda::to_device(k_new), cuda::to_device(v_new), scale, dout, &dprobs,
                         &dnew);
  EXPECT_LE(normalized_error(cuda::to_host(dout), want), 1e-5) << label;
  const Tensor probs = cuda::to_host(dprobs);
  EXPECT_LE(normalized_error(probs, want_probs), 1e-5) << label;
  EXPECT_LE(normalized_error(cuda::to_host(dnew), want_new), 1e-5) << label;

  const std::vector<int32_t> protect_from(static_cast<size_t>(b), static_cast<int32_t>(cap - 8));
  Tensor victim = Tensor::zeros({b, h}, DType::I32);
  cpu::evict_lowest_score(probs, slot_pos, protect_from, victim);  // from the device's scores
  Tensor dvictim = cuda::device_zeros({b, h}, DType::I32);
  cuda::evict_lowest_score(dprobs, dpos, protect_from, dvictim);
  EXPECT_EQ(host_ints(dvictim), ints_of(victim)) << label;
}

constexpr int64_t kOpt30bHeads = 56, kOpt30bHeadDim = 128, kPrompt = 512, kBatch = 32;

TEST(CudaScale, AttentionLayerAtOpt30bShapes) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  // H2O keeping 20% of the prompt: heavy 10% and recent 10%.
  expect_prefill_and_selection_match(kBatch, kPrompt, kOpt30bHeads, kOpt30bHeadDim, 51, 51,
                                     "opt-30b prefill");
  // Decode over the full cache of prompt 512 + 32 generated tokens.
  expect_decode_and_eviction_match(kBatch, kOpt30bHeads, kPrompt + 32, kOpt30bHeadDim,
                                   "opt-30b decode");
}

// A projection of a whole OPT-30B prefill (32 x 512 rows of 7168) in bf16: the bf16 copy of the
// input (235 MB) is taken in several pieces.
TEST(CudaScale, ProjectionOfAnOpt30bPrefillInBf16) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t m = kBatch * kPrompt, k = kOpt30bHeads * kOpt30bHeadDim, n = 256;
  Tensor x = random_tensor({m, k}, DType::F32, 69);
  Tensor w = random_tensor({n, k}, DType::BF16, 70, 0.02f);
  Tensor bias = random_tensor({n}, DType::F32, 71);
  Tensor want = Tensor::zeros({m, n}, DType::F32);
  cpu::linear(x, w, &bias, want, ops::ComputeType::BF16, /*relu=*/false);
  const Tensor dbias = cuda::to_device(bias);
  Tensor dout = cuda::device_zeros({m, n}, DType::F32);
  cuda::linear(cuda::to_device(x), cuda::to_device(w), &dbias, dout, ops::ComputeType::BF16);
  EXPECT_LE(normalized_error(cuda::to_host(dout), want), tolerance(DType::BF16));
}

TEST(CudaScale, MoreSequencesThanOneLaunchTableHolds) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 600;  // SeqInts holds 512 per launch: two launches
  expect_prefill_and_selection_match(b, 24, 2, 32, 4, 4, "600 sequences prefill");
  expect_decode_and_eviction_match(b, 2, 40, 32, "600 sequences decode");
}

TEST(CudaScale, SharedMemoryAbove48KiB) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  // Decode keeps d + cap + 1 scores in shared memory: (64 + 13001) * 4 bytes = 52 KB.
  expect_decode_and_eviction_match(2, 2, 13000, 64, "decode over 13000 slots");
  // Selection sorts the next power of two of candidates and flags the prompt:
  // (2 * 8192 + 5000) * 4 bytes = 85 KB.
  const int64_t b = 2, h = 2, s = 5000;
  Tensor colsum = random_tensor({b, h, s}, DType::F32, 72);
  const std::vector<int32_t> pad = {0, 321};
  Tensor want = Tensor::zeros({b, h, 1000}, DType::I32);
  cpu::select_heavy_recent(colsum, pad, 600, 400, want);
  Tensor dkeep = cuda::device_zeros({b, h, 1000}, DType::I32);
  cuda::select_heavy_recent(cuda::to_device(colsum), pad, 600, 400, dkeep);
  EXPECT_EQ(host_ints(dkeep), ints_of(want));
}

// Prefill rows keep d + s scores in shared memory: (64 + 12300) * 4 bytes = 49.5 KB. Two heads
// only, so the CPU reference stays a few seconds.
TEST(CudaScale, PrefillRowsWithSharedMemoryAbove48KiB) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 1, s = 12300, h = 2, d = 64;
  const std::vector<int32_t> pad = {700};
  Tensor q = random_tensor({b, s, h, d}, DType::F32, 73);
  Tensor k = random_tensor({b, s, h, d}, DType::F32, 74);
  Tensor v = random_tensor({b, s, h, d}, DType::F32, 75);
  Tensor want = Tensor::zeros({b, s, h, d}, DType::F32);
  cpu::attention_prefill(q, k, v, pad, 0.125f, want, nullptr, ops::ComputeType::F32);
  Tensor dout = cuda::device_zeros({b, s, h, d}, DType::F32);
  cuda::attention_prefill(cuda::to_device(q), cuda::to_device(k), cuda::to_device(v), pad, 0.125f,
                          dout, nullptr, ops::ComputeType::F32);
  EXPECT_LE(normalized_error(cuda::to_host(dout), want), 1e-5);
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(CudaScale, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
