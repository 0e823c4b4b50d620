// The 8-bit KV cache (cache_format: q8_0) on the GPU against the CPU: the slot stores write the
// CPU's packed rows byte for byte, and decode attention over q8_0 slots equals, bit for bit,
// the GPU's attention over the f32 rows they unpack to (a q8_0 value is an exact product, read
// in place) and the CPU's attention within f32 rounding.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <cstring>
#include <vector>

#include "runtime/core/storage_format.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

using gpu_test::normalized_error;
using gpu_test::random_tensor;

constexpr PackedFormat kQ8 = PackedFormat::Q8_0;

bool same_bytes(const Tensor& device, const Tensor& host) {
  const Tensor back = cuda::to_host(device);
  return back.nbytes() == host.nbytes() && std::memcmp(back.raw(), host.raw(), host.nbytes()) == 0;
}

TEST(Q8_0KvGpu, StoresPackTheCpuRowsAndAttentionReadsTheirValues) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (int64_t d : {64, 128}) {
    const int64_t b = 2, kvh = 2, h = 6, s = 7, cap = 9;
    const auto rb = static_cast<int64_t>(packed_format_row(kQ8).row_bytes(d));
    const Shape slots_shape{b, kvh, cap, rb};
    Tensor ks = Tensor::zeros(slots_shape, DType::U8).as_packed(kQ8);
    Tensor vs = Tensor::zeros(slots_shape, DType::U8).as_packed(kQ8);
    Tensor pos = Tensor::empty({b, kvh, cap}, DType::I32);
    Tensor score = Tensor::zeros({b, kvh, cap}, DType::F32);
    cpu::fill(pos, -1.0f);
    Tensor dks = cuda::to_device(ks), dvs = cuda::to_device(vs);
    Tensor dpos = cuda::to_device(pos), dscore = cuda::to_device(score);
    ASSERT_EQ(dks.packed(), kQ8);

    // Prefill: 4 of the 7 prompt tokens kept per (sequence, head), compacted.
    const Tensor k = random_tensor({b, s, kvh, d}, DType::F32, 1);
    const Tensor v = random_tensor({b, s, kvh, d}, DType::F32, 2);
    Tensor keep = Tensor::empty({b, kvh, 4}, DType::I32);
    for (int64_t bh = 0; bh < b * kvh; ++bh) {
      for (int i = 0; i < 4; ++i)
        keep.data<int32_t>()[bh * 4 + i] = static_cast<int32_t>(bh % 3 + i);
    }
    cpu::kv_scatter_prefill(k, v, keep, nullptr, true, ks, vs, pos, score);
    ops::kv_scatter_prefill(cuda::to_device(k), cuda::to_device(v), cuda::to_device(keep), nullptr,
                            true, dks, dvs, dpos, dscore);
    EXPECT_TRUE(same_bytes(dks, ks)) << "prefill k, d " << d;
    EXPECT_TRUE(same_bytes(dvs, vs)) << "prefill v, d " << d;
    EXPECT_TRUE(same_bytes(dpos, pos)) << "prefill positions, d " << d;

    // Decode: two tokens inserted into the first free slots (an evicting cache's insert).
    for (int t = 0; t < 2; ++t) {
      const Tensor kn = random_tensor({b, kvh, d}, DType::F32, 10 + t);
      const Tensor vn = random_tensor({b, kvh, d}, DType::F32, 20 + t);
      const Tensor victim = Tensor::zeros({b, kvh}, DType::I32);
      Tensor changed = Tensor::empty({b, kvh}, DType::I32);
      cpu::kv_insert(kn, vn, &victim, s + t, nullptr, 0.0f, ks, vs, pos, score, changed);
      Tensor dchanged = cuda::device_empty({b, kvh}, DType::I32);
      const Tensor dvictim = cuda::to_device(victim);
      ops::kv_insert(cuda::to_device(kn), cuda::to_device(vn), &dvictim, s + t, nullptr, 0.0f, dks,
                     dvs, dpos, dscore, dchanged);
      EXPECT_TRUE(same_bytes(dchanged, changed)) << "changed slots, d " << d;
    }
    EXPECT_TRUE(same_bytes(dks, ks)) << "insert k, d " << d;
    EXPECT_TRUE(same_bytes(dvs, vs)) << "insert v, d " << d;
    EXPECT_TRUE(same_bytes(dpos, pos)) << "insert positions, d " << d;

    const Tensor q = random_tensor({b, h, d}, DType::F32, 30);
    const Tensor kn = random_tensor({b, kvh, d}, DType::F32, 31);
    const Tensor vn = random_tensor({b, kvh, d}, DType::F32, 32);
    const Tensor dq = cuda::to_device(q), dkn = cuda::to_device(kn), dvn = cuda::to_device(vn);
    const float scale = 0.125f;
    Tensor want = Tensor::empty({b, h, d}, DType::F32);
    Tensor want_probs = Tensor::empty({b, kvh, cap}, DType::F32);
    Tensor want_new = Tensor::empty({b, kvh}, DType::F32);
    ops::attention_decode(q, ks, vs, pos, kn, vn, scale, want, &want_probs, &want_new);
    Tensor got = cuda::device_empty({b, h, d}, DType::F32);
    Tensor got_probs = cuda::device_empty({b, kvh, cap}, DType::F32);
    Tensor got_new = cuda::device_empty({b, kvh}, DType::F32);
    ops::attention_decode(dq, dks, dvs, dpos, dkn, dvn, scale, got, &got_probs, &got_new);
    // Both sides attend over the same values in f32; only the order of the sums differs.
    EXPECT_LE(normalized_error(cuda::to_host(got), want), 1e-5) << "d " << d;
    EXPECT_LE(normalized_error(cuda::to_host(got_probs), want_probs), 1e-5) << "d " << d;
    EXPECT_LE(normalized_error(cuda::to_host(got_new), want_new), 1e-5) << "d " << d;

    // The same cache unpacked to f32 rows on the GPU: the very same arithmetic, so the same bits.
    const Shape values{b, kvh, cap, d};
    Tensor kf = cuda::device_empty(values, DType::F32), vf = cuda::device_empty(values, DType::F32);
    ops::unpack(dks, kf);
    ops::unpack(dvs, vf);
    Tensor plain = cuda::device_empty({b, h, d}, DType::F32);
    Tensor plain_probs = cuda::device_empty({b, kvh, cap}, DType::F32);
    Tensor plain_new = cuda::device_empty({b, kvh}, DType::F32);
    ops::attention_decode(dq, kf, vf, dpos, dkn, dvn, scale, plain, &plain_probs, &plain_new);
    EXPECT_TRUE(same_bytes(got, cuda::to_host(plain))) << "d " << d;
    EXPECT_TRUE(same_bytes(got_probs, cuda::to_host(plain_probs))) << "d " << d;
    EXPECT_TRUE(same_bytes(got_new, cuda::to_host(plain_new))) << "d " << d;
  }
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(Q8_0KvGpu, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
