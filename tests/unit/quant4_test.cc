// 4-bit group-wise compression (runtime/core/quant4.h) on the CPU: round trips within half a
// step of each group, exact constant groups, the byte layout decoded by hand here, and sizes
// that agree with StorageFormat.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/core/quant4.h"
#include "runtime/core/rng.h"
#include "runtime/core/storage_format.h"
#include "runtime/ops/ops.h"
#include "tests/support/random_rows.h"

namespace h2oflex {
namespace {

Tensor compress(const Tensor& x) {
  const int64_t n = x.dim(x.rank() - 1);
  Tensor packed = Tensor::empty({x.numel() / n, quant4::row_bytes(n)}, DType::U8)
                      .as_packed(PackedFormat::Q4G64);
  ops::quantize4(x, packed);
  return packed;
}

Tensor decompress(const Tensor& packed, const Shape& shape, DType dtype = DType::F32) {
  Tensor out = Tensor::empty(shape, dtype);
  ops::dequantize4(packed, out);
  return out;
}

// A group's (lo, step) read straight from the row bytes.
std::pair<float, float> group_meta(const Tensor& packed, int64_t row, int64_t n, int64_t g) {
  const uint8_t* p = packed.data<uint8_t>() + row * quant4::row_bytes(n) + quant4::code_bytes(n);
  uint16_t h[2];
  std::memcpy(h, p + 4 * g, 4);
  return {f16_to_f32(h[0]), f16_to_f32(h[1])};
}

TEST(Quant4, RowBytesAreTheStorageFormatsBytes) {
  for (int64_t n : {1, 2, 63, 64, 65, 127, 128, 4096, 4097}) {
    EXPECT_EQ(static_cast<uint64_t>(quant4::row_bytes(n)),
              compressed_format(DType::F16).bytes(static_cast<uint64_t>(n)))
        << n;
  }
  // 4.5 bits per value for whole groups: 0.28125 of fp16's bytes.
  EXPECT_EQ(compressed_format(DType::F16).bytes(4096 * 4096, 4096) * 32,
            StorageFormat::plain(DType::F16).bytes(4096 * 4096) * 9);
}

TEST(Quant4, RoundTripIsWithinHalfAStepOfEachGroup) {
  for (int64_t n : {64, 128, 100, 65, 1, 7, 4096}) {
    const Tensor x = random_rows(13, n, static_cast<uint64_t>(n), 0.7f);
    const Tensor packed = compress(x);
    const Tensor y = decompress(packed, x.shape());
    for (int64_t r = 0; r < 13; ++r) {
      for (int64_t g = 0; g < quant4::groups(n); ++g) {
        const auto [lo, step] = group_meta(packed, r, n, g);
        float mn = INFINITY, mx = -INFINITY;
        for (int64_t i = g * 64; i < std::min(n, g * 64 + 64); ++i) {
          mn = std::min(mn, x.data<float>()[r * n + i]);
          mx = std::max(mx, x.data<float>()[r * n + i]);
        }
        // lo rounds down, lo + 15 step covers the maximum, the step is not wastefully large.
        EXPECT_LE(lo, mn);
        EXPECT_GE(lo + 15 * step, mx - 1e-6f * std::fabs(mx) - 1e-7f);
        if (mx > mn) {
          EXPECT_LE(step, (mx - lo) / 15 * 1.002f + 1e-7f);
        }
        for (int64_t i = g * 64; i < std::min(n, g * 64 + 64); ++i) {
          const float a = x.data<float>()[r * n + i], b = y.data<float>()[r * n + i];
          EXPECT_LE(std::fabs(a - b), step / 2 * (1 + 1e-5f) + 1e-7f)
              << "n " << n << " row " << r << " value " << i;
        }
      }
    }
  }
}

TEST(Quant4, ConstantGroupsComeBackExactly) {
  Tensor x = Tensor::empty({3, 130}, DType::F32);
  const float values[3] = {0.0f, -3.25f, 1.5f};  // fp16-representable
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t i = 0; i < 130; ++i) x.data<float>()[r * 130 + i] = values[r];
  }
  const Tensor packed = compress(x);
  const Tensor y = decompress(packed, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.data<float>()[i], x.data<float>()[i]) << i;
  EXPECT_EQ(group_meta(packed, 1, 130, 2).second, 0.0f);  // max == min: step 0
}

TEST(Quant4, LayoutIsLowNibbleFirstThenGroupMinAndStep) {
  // One group 0, 1, ..., 15, 0, 1, ... : lo 0, step 1, codes equal to the values.
  Tensor x = Tensor::empty({1, 35}, DType::F32);
  for (int64_t i = 0; i < 35; ++i) x.data<float>()[i] = static_cast<float>(i % 16);
  const Tensor packed = compress(x);
  ASSERT_EQ(packed.numel(), 18 + 4);
  const uint8_t* p = packed.data<uint8_t>();
  for (int64_t j = 0; j < 17; ++j) {
    EXPECT_EQ(p[j] & 15, (2 * j) % 16) << j;
    EXPECT_EQ(p[j] >> 4, (2 * j + 1) % 16) << j;
  }
  EXPECT_EQ(p[17], 34 % 16);  // the odd row's last high nibble is 0
  EXPECT_EQ(group_meta(packed, 0, 35, 0), std::make_pair(0.0f, 1.0f));
}

TEST(Quant4, RowsStandAlone) {
  // Compressing rows one at a time gives the bytes of compressing them together, so a KV row
  // can be written or moved without its neighbours.
  const Tensor x = random_rows(5, 96, 3, 2.0f);
  const Tensor all = compress(x);
  for (int64_t r = 0; r < 5; ++r) {
    const Tensor one = compress(x.slice(r, r + 1));
    EXPECT_EQ(std::memcmp(one.raw(), all.data<uint8_t>() + r * quant4::row_bytes(96),
                          static_cast<size_t>(quant4::row_bytes(96))),
              0)
        << r;
  }
}

TEST(Quant4, DequantizesTo16BitTypesAsTheRoundedF32Values) {
  const Tensor x = random_rows(4, 200, 9, 1.0f);
  const Tensor packed = compress(x);
  const Tensor f = decompress(packed, x.shape());
  const Tensor b = decompress(packed, x.shape(), DType::BF16);
  const Tensor h = decompress(packed, x.shape(), DType::F16);
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(b.data<uint16_t>()[i], f32_to_bf16(f.data<float>()[i])) << i;
    EXPECT_EQ(h.data<uint16_t>()[i], f32_to_f16(f.data<float>()[i])) << i;
  }
}

// linear() on compressed rows computes with the dequantized matrix: against the plain linear on
// that matrix, for decode-like and prefill-like inputs, one piece and many, with bias and ReLU.
TEST(Quant4, LinearOnCompressedRowsIsLinearOnTheDequantizedMatrix) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{3, 64, 40},
                         {8, 4096, 300},
                         {70, 1000, 4500},
                         {16, 130, 70},
                         {1, 33, 5}}) {
    const Tensor w = random_rows(n, k, 5, 0.05f);
    const Tensor x = random_rows(m, k, 6, 1.0f);
    const Tensor bias = random_rows(1, n, 7, 0.1f).reshape({n});
    const Tensor packed = compress(w);
    const Tensor wide = decompress(packed, w.shape());
    for (bool relu : {false, true}) {
      Tensor got = Tensor::empty({m, n}, DType::F32), want = Tensor::empty({m, n}, DType::F32);
      ops::linear(x, packed, &bias, got, ops::ComputeType::F32, relu);
      ops::linear(x, wide, &bias, want, ops::ComputeType::F32, relu);
      double worst = 0;
      for (int64_t i = 0; i < m * n; ++i) {
        const double scale = std::sqrt(static_cast<double>(k)) * 0.05 + 1e-3;
        worst = std::max(worst, std::fabs(got.data<float>()[i] - want.data<float>()[i]) / scale);
      }
      EXPECT_LT(worst, 1e-5) << m << "x" << k << "x" << n << " relu " << relu;
    }
  }
  // 16-bit compute: the matrix dequantized to the operand type, then the plain 16-bit GEMM.
  {
    const Tensor w = random_rows(300, 200, 8, 0.05f), x = random_rows(5, 200, 9, 1.0f);
    const Tensor packed = compress(w);
    const Tensor wide = decompress(packed, w.shape(), DType::BF16);
    Tensor got = Tensor::empty({5, 300}, DType::F32), want = Tensor::empty({5, 300}, DType::F32);
    ops::linear(x, packed, nullptr, got, ops::ComputeType::BF16);
    ops::linear(x, wide, nullptr, want, ops::ComputeType::BF16);
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0);
  }
  // A compressed weight whose rows are not x's row length is refused.
  const Tensor packed = compress(random_rows(4, 64, 1, 1.0f));
  const Tensor x = random_rows(2, 65, 2, 1.0f);
  Tensor out = Tensor::empty({2, 4}, DType::F32);
  EXPECT_ANY_THROW(ops::linear(x, packed, nullptr, out, ops::ComputeType::F32));
}

// A compressed KV cache: kv_insert stores the compressed row, and attention_decode over it is
// attention over the dequantized rows (the same values, so the same bits).
TEST(Quant4, CompressedKvSlotsHoldCompressedRowsAndAttendAsTheirValues) {
  const int64_t b = 2, kvh = 2, h = 4, cap = 5, d = 80;
  const int64_t rb = quant4::row_bytes(d);
  Tensor ks = Tensor::zeros({b, kvh, cap, rb}, DType::U8),
         vs = Tensor::zeros({b, kvh, cap, rb}, DType::U8);
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
      const Tensor want = compress(ks_new[t].reshape({b * kvh, d}).slice(bh, bh + 1));
      EXPECT_EQ(std::memcmp(ks.data<uint8_t>() + (bh * cap + t) * rb, want.raw(),
                            static_cast<size_t>(rb)),
                0)
          << bh << " " << t;
    }
  }
  // The same cache as f32 values.
  Tensor kf = decompress(ks.reshape({b * kvh * cap, rb}), {b, kvh, cap, d});
  Tensor vf = decompress(vs.reshape({b * kvh * cap, rb}), {b, kvh, cap, d});
  const Tensor q = random_rows(b * h, d, 60, 1.0f).reshape({b, h, d});
  const Tensor kn = random_rows(b * kvh, d, 61, 1.0f).reshape({b, kvh, d});
  const Tensor vn = random_rows(b * kvh, d, 62, 1.0f).reshape({b, kvh, d});
  Tensor out_c = Tensor::empty({b, h, d}, DType::F32), out_f = Tensor::empty({b, h, d}, DType::F32);
  Tensor probs_c = Tensor::empty({b, kvh, cap}, DType::F32),
         probs_f = Tensor::empty({b, kvh, cap}, DType::F32);
  Tensor self_c = Tensor::empty({b, kvh}, DType::F32), self_f = Tensor::empty({b, kvh}, DType::F32);
  ops::attention_decode(q, ks, vs, pos, kn, vn, 0.1f, out_c, &probs_c, &self_c);
  ops::attention_decode(q, kf, vf, pos, kn, vn, 0.1f, out_f, &probs_f, &self_f);
  EXPECT_EQ(std::memcmp(out_c.raw(), out_f.raw(), out_c.nbytes()), 0);
  EXPECT_EQ(std::memcmp(probs_c.raw(), probs_f.raw(), probs_c.nbytes()), 0);
  EXPECT_EQ(std::memcmp(self_c.raw(), self_f.raw(), self_c.nbytes()), 0);
}

TEST(Quant4, WrongSizesAreRefused) {
  const Tensor x = random_rows(2, 64, 1, 1.0f);
  Tensor small = Tensor::empty({2, quant4::row_bytes(64) - 1}, DType::U8);
  EXPECT_ANY_THROW(ops::quantize4(x, small));
  Tensor wrong_type = Tensor::empty({2, 64}, DType::I32);
  EXPECT_ANY_THROW(ops::dequantize4(compress(x), wrong_type));
}

}  // namespace
}  // namespace h2oflex
