// linear() on weights packed in a GGUF block format (runtime/core/storage_format.h): the product
// equals linear() on the matrix those blocks unpack to (the unpacking itself equals the `gguf`
// package's, tests/loaders/block_format_test.cc), for every row of the table, every input size
// (the fused few-rows kernel and the unpack-then-GEMM pieces) and each compute type.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "runtime/core/half.h"
#include "runtime/core/rng.h"
#include "runtime/core/storage_format.h"
#include "runtime/ops/compute_choice.h"
#include "runtime/ops/ops.h"
#include "tests/support/random_rows.h"
#include "tests/unit/packed_tables.h"

namespace h2oflex {
namespace {

using testing_support::random_packed;

Tensor unpacked(const Tensor& packed, int64_t k) {
  Tensor out = Tensor::empty({packed.dim(0), k}, DType::F32);
  ops::unpack(packed, out);
  return out;
}

double max_relative_error(const Tensor& got, const Tensor& want) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, std::fabs(double(want.data<float>()[i])));
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    worst = std::max(worst, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
  }
  return worst / std::max(scale, 1e-30);
}

class PackedLinear : public ::testing::TestWithParam<PackedFormat> {};

TEST_P(PackedLinear, EqualsLinearOnTheUnpackedMatrix) {
  const PackedFormat f = GetParam();
  const int64_t n = 96, k = 512;
  const Tensor w = random_packed(f, n, k, 7);
  const Tensor wide = unpacked(w, k);
  Tensor bias = random_rows(1, n, 9, 0.1f).reshape({n});
  for (int64_t m : {1, 3, 16, 17, 64, 70}) {
    const Tensor x = random_rows(m, k, 11 + static_cast<uint64_t>(m), 1.0f);
    for (ops::ComputeType ct : {ops::ComputeType::F32, ops::ComputeType::BF16}) {
      Tensor got = Tensor::empty({m, n}, DType::F32), want = Tensor::empty({m, n}, DType::F32);
      ops::linear(x, w, &bias, got, ct, /*relu=*/m % 2 == 1);
      // Up to 16 rows (a decode step) are multiplied from the blocks in f32 whatever the compute
      // type: the f32 product of the unpacked matrix, up to the order the fused kernel adds a
      // row's products in. More rows: the plain path on the same values in the compute's operand
      // type, bit for bit.
      const bool f32 = ct == ops::ComputeType::F32 || m <= 16;
      const Tensor operand = f32 ? wide : to_dtype(wide, ops::operand_dtype(ct));
      ops::linear(x, operand, &bias, want, f32 ? ops::ComputeType::F32 : ct, m % 2 == 1);
      const double tol = f32 ? 1e-5 : 0.0;
      EXPECT_LE(max_relative_error(got, want), tol)
          << packed_format_row(f).name << " m=" << m << " " << ops::compute_type_name(ct);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryGgufRow, PackedLinear,
                         ::testing::Values(PackedFormat::Q8_0, PackedFormat::Q4_0,
                                           PackedFormat::Q4_1, PackedFormat::Q4_K,
                                           PackedFormat::Q6_K),
                         [](const auto& info) {
                           return std::string(packed_format_row(info.param).name);
                         });

// A row that is not whole blocks, and a packed tensor of the wrong byte count, are refused.
TEST(PackedLinearRefusal, RowsThatAreNotWholeBlocks) {
  const Tensor w = random_packed(PackedFormat::Q8_0, 4, 64, 1);
  const Tensor x = random_rows(1, 48, 2, 1.0f);
  Tensor out = Tensor::empty({1, 4}, DType::F32);
  try {
    ops::linear(x, w, nullptr, out, ops::ComputeType::F32);
    FAIL() << "a 48-value row of q8_0 blocks of 32 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not whole q8_0 blocks"), std::string::npos) << e.what();
  }
}

// Packing to a K format (which only GGUF files provide) is an input error naming the packable
// formats.
TEST(PackedLinearRefusal, TheKFormatsCannotBePacked) {
  Tensor packed = Tensor::empty(stored_shape({DType::F32, PackedFormat::Q4_K}, {2, 256}), DType::U8)
                      .as_packed(PackedFormat::Q4_K);
  try {
    ops::pack(random_rows(2, 256, 3, 1.0f), packed);
    FAIL() << "q4_k was packed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("packable formats: q4_g64, q8_0, q4_0, q4_1"),
              std::string::npos)
        << e.what();
  }
}

// The row sizes are GGUF's: a Q4_1 row of 576 values is 18 blocks of 20 bytes; q4_g64 keeps its
// 4.5 bits per value.
TEST(PackedFormats, RowBytesAreTheBlockLayouts) {
  EXPECT_EQ((StorageFormat{DType::F32, PackedFormat::Q4_1}.row_bytes(576)), 18u * 20u);
  EXPECT_EQ((StorageFormat{DType::F32, PackedFormat::Q8_0}.row_bytes(64)), 2u * 34u);
  EXPECT_EQ((StorageFormat{DType::F32, PackedFormat::Q4_K}.row_bytes(512)), 2u * 144u);
  EXPECT_EQ((StorageFormat{DType::F32, PackedFormat::Q6_K}.row_bytes(256)), 210u);
  EXPECT_EQ((StorageFormat{DType::F32, PackedFormat::Q4G64}.row_bytes(128)), 64u + 2u * 4u);
  EXPECT_FALSE(row_fits(PackedFormat::Q4_K, 576));
  EXPECT_TRUE(row_fits(PackedFormat::Q4G64, 577));
  EXPECT_EQ(packed_format_by_name("Q4_1"), &packed_format_row(PackedFormat::Q4_1));
  EXPECT_EQ(packed_format_by_ggml_name("Q6_K"), &packed_format_row(PackedFormat::Q6_K));
  EXPECT_EQ(packed_format_by_ggml_name("Q5_K"), nullptr);
}

}  // namespace
}  // namespace h2oflex
