// The KV slot stores and memory ops on the GPU against their CPU twins (h2oflex::cpu): slot
// contents within the storage dtype's rounding, positions, scores and changed slots exactly.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

using gpu_test::random_tensor;

Tensor ints(Shape shape, const std::vector<int32_t>& values) {
  Tensor t = Tensor::empty(std::move(shape), DType::I32);
  std::copy(values.begin(), values.end(), t.data<int32_t>());
  return t;
}

std::vector<int32_t> as_ints(const Tensor& t) {
  const Tensor h = cuda::to_host(t);
  return {h.data<int32_t>(), h.data<int32_t>() + h.numel()};
}

std::vector<float> as_floats(const Tensor& t) {
  const Tensor h = t.device() == Device::CUDA ? cuda::to_host(t) : t;
  const Tensor f = h.dtype() == DType::F32 ? h : to_dtype(h, DType::F32);
  return {f.data<float>(), f.data<float>() + f.numel()};
}

// Slots on the host and their device copy, starting empty (positions -1, scores 0).
struct SlotPair {
  Tensor k, v, pos, score;
  Tensor dk, dv, dpos, dscore;
  SlotPair(int64_t b, int64_t h, int64_t cap, int64_t d, DType dtype) {
    k = Tensor::zeros({b, h, cap, d}, dtype);
    v = Tensor::zeros({b, h, cap, d}, dtype);
    pos = Tensor::empty({b, h, cap}, DType::I32);
    score = Tensor::zeros({b, h, cap}, DType::F32);
    cpu::fill(pos, -1.0f);
    dk = cuda::to_device(k);
    dv = cuda::to_device(v);
    dpos = cuda::to_device(pos);
    dscore = cuda::to_device(score);
  }
  void expect_equal(const char* what) const {
    EXPECT_EQ(as_floats(k), as_floats(dk)) << what << ": k";
    EXPECT_EQ(as_floats(v), as_floats(dv)) << what << ": v";
    EXPECT_EQ(std::vector<int32_t>(pos.data<int32_t>(), pos.data<int32_t>() + pos.numel()),
              as_ints(dpos))
        << what << ": positions";
    EXPECT_EQ(as_floats(score), as_floats(dscore)) << what << ": scores";
  }
};

class KvOpsTest : public ::testing::TestWithParam<DType> {};

TEST_P(KvOpsTest, ScatterPrefillMatchesCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 3, s = 9, h = 4, d = 40, cap = 12;
  const Tensor k = random_tensor({b, s, h, d}, DType::F32, 1);
  const Tensor v = random_tensor({b, s, h, d}, DType::F32, 2);
  const Tensor colsum = random_tensor({b, h, s}, DType::F32, 3);
  // Compact (evicting) selection: 5 kept per (sequence, head), one padded with -1.
  std::vector<int32_t> keep_values;
  for (int64_t bh = 0; bh < b * h; ++bh) {
    const int32_t first = static_cast<int32_t>(bh % 3);
    for (int i = 0; i < 5; ++i) keep_values.push_back(i == 4 && bh % 2 ? -1 : first + i);
  }
  const Tensor keep = ints({b, h, 5}, keep_values);
  for (bool compact : {true, false}) {
    SlotPair slots(b, h, cap, d, GetParam());
    cpu::kv_scatter_prefill(k, v, keep, &colsum, compact, slots.k, slots.v, slots.pos, slots.score);
    const Tensor dk = cuda::to_device(k), dv = cuda::to_device(v), dkeep = cuda::to_device(keep);
    const Tensor dcol = cuda::to_device(colsum);
    ops::kv_scatter_prefill(dk, dv, dkeep, &dcol, compact, slots.dk, slots.dv, slots.dpos,
                            slots.dscore);
    slots.expect_equal(compact ? "compact" : "by position");
  }
}

TEST_P(KvOpsTest, InsertMatchesCpuForFullAndEvictingCaches) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t b = 2, h = 3, d = 64, cap = 6;
  for (int round = 0; round < 2; ++round) {
    SlotPair slots(b, h, cap, d, GetParam());
    // Some slots taken; (sequence 1, head 2) full, so its victim is used.
    for (int64_t bh = 0; bh < b * h; ++bh) {
      const int64_t filled = bh == 5 ? cap : bh % 3 + 1;
      for (int64_t j = 0; j < filled; ++j) {
        slots.pos.data<int32_t>()[bh * cap + j] = static_cast<int32_t>(j);
      }
    }
    slots.dpos = cuda::to_device(slots.pos);
    const Tensor kn = random_tensor({b, h, d}, DType::F32, 10 + round);
    const Tensor vn = random_tensor({b, h, d}, DType::F32, 20 + round);
    const Tensor score = random_tensor({b, h}, DType::F32, 30 + round);
    const Tensor victim = ints({b, h}, {0, 1, 2, 0, 1, 4});
    const bool evicting = round == 0;
    const int32_t position = evicting ? 40 : 4;
    Tensor changed = Tensor::empty({b, h}, DType::I32);
    cpu::kv_insert(kn, vn, evicting ? &victim : nullptr, position, evicting ? &score : nullptr,
                   7.5f, slots.k, slots.v, slots.pos, slots.score, changed);
    const Tensor dkn = cuda::to_device(kn), dvn = cuda::to_device(vn);
    const Tensor dscore = cuda::to_device(score), dvictim = cuda::to_device(victim);
    Tensor dchanged = cuda::device_empty({b, h}, DType::I32);
    ops::kv_insert(dkn, dvn, evicting ? &dvictim : nullptr, position, evicting ? &dscore : nullptr,
                   7.5f, slots.dk, slots.dv, slots.dpos, slots.dscore, dchanged);
    slots.expect_equal(evicting ? "evicting" : "full");
    EXPECT_EQ(std::vector<int32_t>(changed.data<int32_t>(), changed.data<int32_t>() + b * h),
              as_ints(dchanged));
    if (evicting) {
      EXPECT_EQ(changed.data<int32_t>()[5], 4);  // the victim of the full head
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, KvOpsTest, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const auto& info) { return gpu_test::dtype_label(info.param); });

// The KV store's gather: scattered pieces (word-aligned and not, one empty) packed on the device
// exactly as the CPU packs them.
TEST(CudaOps, GatherRangesMatchesCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t n = 1 << 16;
  Tensor src = random_tensor({n}, DType::F32, 90);
  ByteRanges ranges;
  for (uint64_t off = 64; off + 256 <= 40000; off += 1000) ranges.emplace_back(off, 256);
  ranges.emplace_back(50001, 37);  // unaligned
  ranges.emplace_back(60000, 0);
  ranges.emplace_back(4, 12);  // out of order
  const uint64_t packed = total_length(ranges);
  std::vector<char> want(packed);
  cpu::gather_ranges(src.raw(), ranges, want.data());
  const Tensor dsrc = cuda::to_device(src);
  Tensor ddst = cuda::device_zeros({static_cast<int64_t>(packed)}, DType::I32);  // room to spare
  cuda::gather_ranges(dsrc.raw(), ranges, ddst.raw());
  const Tensor got = cuda::to_host(ddst);
  EXPECT_EQ(std::memcmp(got.raw(), want.data(), packed), 0);
}

TEST(CudaOps, FillAndCopyMatchCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  Tensor f = cuda::device_empty({1000}, DType::F32);
  Tensor i = cuda::device_empty({77}, DType::I32);
  ops::fill(f, 2.5f);
  ops::fill(i, -1.0f);
  EXPECT_EQ(as_floats(f), std::vector<float>(1000, 2.5f));
  EXPECT_EQ(as_ints(i), std::vector<int32_t>(77, -1));
  // Host -> device -> device -> host round trip through ops::copy.
  const Tensor src = random_tensor({33, 7}, DType::F32, 5);
  Tensor d1 = ops::empty(src.shape(), DType::F32, Device::CUDA);
  Tensor d2 = ops::empty(src.shape(), DType::F32, Device::CUDA);
  Tensor back = Tensor::empty(src.shape(), DType::F32);
  ops::copy(src, d1);
  ops::copy(d1, d2);
  ops::copy(d2, back);
  EXPECT_EQ(as_floats(back), as_floats(src));
}

}  // namespace
}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
