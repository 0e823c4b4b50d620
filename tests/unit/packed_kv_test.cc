// A KV cache packed in a KV format (cache_format: q4_g64, q8_0): kv_insert stores each row as the
// format's packer packs it (q8_0's is ggml's reference quantizer, equal to the `gguf` package's,
// tests/loaders/block_format_test.cc), and attention_decode over the packed slots is attention
// over the rows they unpack to (the same values, up to f32 rounding of the sums).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/core/storage_format.h"
#include "runtime/ops/ops.h"
#include "tests/support/random_rows.h"

namespace h2oflex {
namespace {

class PackedKv : public ::testing::TestWithParam<PackedFormat> {};

TEST_P(PackedKv, SlotsHoldPackedRowsAndAttendAsTheirValues) {
  const PackedFormat f = GetParam();
  const int64_t b = 2, kvh = 2, h = 4, cap = 5, d = 64;
  const auto rb = static_cast<int64_t>(packed_format_row(f).row_bytes(d));
  Tensor ks = Tensor::zeros({b, kvh, cap, rb}, DType::U8).as_packed(f),
         vs = Tensor::zeros({b, kvh, cap, rb}, DType::U8).as_packed(f);
  Tensor pos = Tensor::empty({b, kvh, cap}, DType::I32),
         score = Tensor::zeros({b, kvh, cap}, DType::F32);
  ops::fill(pos, -1.0f);
  Tensor changed = Tensor::empty({b, kvh}, DType::I32);
  std::vector<Tensor> ks_new, vs_new;
  for (int t = 0; t < 3; ++t) {  // a full cache: token t in slot t
    ks_new.push_back(random_rows(b * kvh, d, 20 + t, 1.0f).reshape({b, kvh, d}));
    vs_new.push_back(random_rows(b * kvh, d, 40 + t, 1.0f).reshape({b, kvh, d}));
    ops::kv_insert(ks_new[t], vs_new[t], nullptr, t, nullptr, 0.0f, ks, vs, pos, score, changed);
  }
  for (int64_t bh = 0; bh < b * kvh; ++bh) {
    for (int t = 0; t < 3; ++t) {
      Tensor want = Tensor::empty({1, rb}, DType::U8).as_packed(f);
      ops::pack(ks_new[t].reshape({b * kvh, d}).slice(bh, bh + 1), want);
      EXPECT_EQ(std::memcmp(ks.data<uint8_t>() + (bh * cap + t) * rb, want.raw(),
                            static_cast<size_t>(rb)),
                0)
          << bh << " " << t;
    }
  }
  // The same cache as f32 values.
  const auto values = [&](const Tensor& packed) {
    Tensor out = Tensor::empty({b, kvh, cap, d}, DType::F32);
    Tensor rows = out.reshape({b * kvh * cap, d});
    ops::unpack(packed.reshape({b * kvh * cap, rb}), rows);
    return out;
  };
  const Tensor kf = values(ks), vf = values(vs);
  const Tensor q = random_rows(b * h, d, 60, 1.0f).reshape({b, h, d});
  const Tensor kn = random_rows(b * kvh, d, 61, 1.0f).reshape({b, kvh, d});
  const Tensor vn = random_rows(b * kvh, d, 62, 1.0f).reshape({b, kvh, d});
  Tensor out_c = Tensor::empty({b, h, d}, DType::F32), out_f = Tensor::empty({b, h, d}, DType::F32);
  Tensor probs_c = Tensor::empty({b, kvh, cap}, DType::F32),
         probs_f = Tensor::empty({b, kvh, cap}, DType::F32);
  Tensor self_c = Tensor::empty({b, kvh}, DType::F32), self_f = Tensor::empty({b, kvh}, DType::F32);
  ops::attention_decode(q, ks, vs, pos, kn, vn, 0.1f, out_c, &probs_c, &self_c);
  ops::attention_decode(q, kf, vf, pos, kn, vn, 0.1f, out_f, &probs_f, &self_f);
  // Within f32 rounding: an f32 cache of 64-value rows may take the vectorised kernel, which adds
  // in another order than the one that reads packed rows.
  const auto expect_close = [](const Tensor& got, const Tensor& want) {
    for (int64_t i = 0; i < want.numel(); ++i) {
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << i;
    }
  };
  expect_close(out_c, out_f);
  expect_close(probs_c, probs_f);
  expect_close(self_c, self_f);
  // q8_0 keeps a row within half a step (its block's absolute maximum / 127 / 2) of its values.
  if (f == PackedFormat::Q8_0) {
    const float* got = kf.data<float>();
    const float* was = ks_new[1].data<float>();
    for (int64_t bh = 0; bh < b * kvh; ++bh) {
      for (int64_t j = 0; j < d; ++j) {
        EXPECT_NEAR(got[(bh * cap + 1) * d + j], was[bh * d + j], 4.0 / 127 / 2 + 1e-3);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKvFormat, PackedKv,
                         ::testing::Values(PackedFormat::Q4G64, PackedFormat::Q8_0),
                         [](const auto& info) {
                           return std::string(packed_format_row(info.param).name);
                         });

}  // namespace
}  // namespace h2oflex
