// The CUDA kernels for GGUF's block formats against their CPU twins: unpacked values bit for bit
// in every output type, packed blocks byte for byte, and linear() on packed weights (the fused
// few-rows kernel and the unpack-then-cuBLAS pieces) within f32 rounding of the CPU's.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/storage_format.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/packed_rows.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/ops/compute_choice.h"
#include "runtime/ops/ops.h"
#include "tests/support/random_blocks.h"

namespace h2oflex {
namespace {

using gpu_test::random_tensor;
using ops::ComputeType;

constexpr std::array kGguf = {PackedFormat::Q8_0, PackedFormat::Q4_0, PackedFormat::Q4_1,
                              PackedFormat::Q4_K, PackedFormat::Q6_K};

std::string name(PackedFormat f) {
  return std::string(packed_format_row(f).name);
}

Tensor empty_packed(PackedFormat f, int64_t rows, int64_t n) {
  const auto rb = static_cast<int64_t>(packed_format_row(f).row_bytes(n));
  return Tensor::empty({rows, rb}, DType::U8).as_packed(f);
}

// `rows` host rows of n values in f from random block bytes; scale as random_blocks's.
Tensor random_packed(PackedFormat f, int64_t rows, int64_t n, uint64_t seed, float scale) {
  Tensor t = empty_packed(f, rows, n);
  const std::vector<uint8_t> bytes = random_blocks(
      f, static_cast<size_t>(rows * n / packed_format_row(f).block_values), seed, scale);
  std::memcpy(t.raw(), bytes.data(), bytes.size());
  return t;
}

// Weights for a product: packable formats packed from normal(0, 0.05) values, the K formats
// (read from files only) random blocks whose values are of that order.
Tensor weight(PackedFormat f, int64_t n, int64_t k, uint64_t seed) {
  if (!packed_format_row(f).packable) {
    return random_packed(f, n, k, seed, f == PackedFormat::Q4_K ? 0.002f : 0.0004f);
  }
  Tensor w = empty_packed(f, n, k);
  cpu::pack(random_tensor({n, k}, DType::F32, seed, 0.05f), w);
  return w;
}

TEST(PackedRowsGpu, UnpackEqualsTheCpuBitForBitInEveryOutputType) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 9, n = 768;  // 24 blocks of 32, 3 of 256 a row
  for (PackedFormat f : kGguf) {
    // Any finite f16 scale: subnormal, zero and negative ones too.
    const Tensor packed = random_packed(f, rows, n, 3 + static_cast<uint64_t>(f), 0);
    Tensor want = Tensor::empty({rows, n}, DType::F32);
    cpu::unpack(packed, want);
    const Tensor dpacked = cuda::to_device(packed);
    Tensor got = cuda::device_empty({rows, n}, DType::F32);
    ops::unpack(dpacked, got);
    EXPECT_EQ(std::memcmp(cuda::to_host(got).raw(), want.raw(), want.nbytes()), 0) << name(f);
    for (DType t : {DType::BF16, DType::F16}) {
      const Tensor want16 = to_dtype(want, t);  // rounded to nearest even, as the kernel does
      Tensor got16 = cuda::device_empty({rows, n}, t);
      cuda::unpack(dpacked, got16);
      EXPECT_EQ(std::memcmp(cuda::to_host(got16).raw(), want16.raw(), want16.nbytes()), 0)
          << name(f) << " " << dtype_name(t);
    }
  }
}

TEST(PackedRowsGpu, PackEqualsTheCpuByteForByte) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 37, n = 256;
  Tensor x = random_tensor({rows, n}, DType::F32, 11, 0.5f);
  float* v = x.data<float>();
  for (int64_t j = 0; j < n; ++j) {
    v[j] = 0.0f;                                                             // zeros: d = 0
    v[n + j] = 0.375f;                                                       // constant
    v[2 * n + j] = j == 7 ? -1e4f : 1e-3f;                                   // one outlier
    v[3 * n + j] = static_cast<float>(j % 32) - 15.5f;                       // codes on ties
    v[4 * n + j] = j % 32 == 0 ? 127.0f : static_cast<float>(j % 9) + 0.5f;  // q8_0 ties
    v[5 * n + j] = j % 2 == 0 ? 1e-8f : -1e-8f;  // an f16-subnormal scale
  }
  const Tensor dx = cuda::to_device(x);
  for (PackedFormat f : {PackedFormat::Q8_0, PackedFormat::Q4_0, PackedFormat::Q4_1}) {
    Tensor want = empty_packed(f, rows, n);
    ops::pack(x, want);
    Tensor got = cuda::device_empty(want.shape(), DType::U8).as_packed(f);
    ops::pack(dx, got);
    EXPECT_EQ(std::memcmp(cuda::to_host(got).raw(), want.raw(), want.nbytes()), 0) << name(f);
  }
  // The K formats are read from files only, on the GPU as on the CPU.
  Tensor k_rows = cuda::device_empty(empty_packed(PackedFormat::Q4_K, rows, n).shape(), DType::U8)
                      .as_packed(PackedFormat::Q4_K);
  EXPECT_THROW(ops::pack(dx, k_rows), InputError);
}

// Both backends multiply the same operand values: the blocks unpack bit for bit alike, and x is
// used in f32 (up to 16 rows, the fused kernels, whatever the compute type) or rounded to the
// same 16-bit type; every sum is accumulated in f32. Only the order of the additions differs,
// which moves a k = 512 dot product by about sqrt(k) * 2^-24 relative (~1e-6): 1e-5 with f32
// operands. cuBLAS's tensor cores may round their f32 accumulation differently, hence 1e-4 with
// 16-bit operands, still far below the ~2e-3 that one different 16-bit rounding of the operands
// (or a fused kernel taking 16-bit operands) would cause.
double linear_tolerance(int64_t m, ComputeType ct) {
  return m <= 16 || ct == ComputeType::F32 ? 1e-5 : 1e-4;
}

TEST(PackedRowsGpu, LinearOnBlocksMatchesTheCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t n = 203, k = 512;  // n: a last thread block of the fused kernel partly idle
  const Tensor bias = random_tensor({n}, DType::F32, 5, 0.1f);
  const Tensor dbias = cuda::to_device(bias);
  for (PackedFormat f : kGguf) {
    const Tensor w = weight(f, n, k, 21 + static_cast<uint64_t>(f));
    const Tensor dw = cuda::to_device(w);
    for (int64_t m : {1, 3, 16, 17, 64}) {
      const Tensor x = random_tensor({m, k}, DType::F32, 30 + static_cast<uint64_t>(m));
      const Tensor dx = cuda::to_device(x);
      for (ComputeType ct : {ComputeType::F32, ComputeType::BF16, ComputeType::F16}) {
        const bool relu = m == 3;
        Tensor want = Tensor::empty({m, n}, DType::F32);
        ops::linear(x, w, &bias, want, ct, relu);
        Tensor got = cuda::device_empty({m, n}, DType::F32);
        ops::linear(dx, dw, &dbias, got, ct, relu);
        EXPECT_LT(gpu_test::normalized_error(cuda::to_host(got), want), linear_tolerance(m, ct))
            << name(f) << " m " << m << " " << ops::compute_type_name(ct);
        if (m == 64) {  // small pieces: the unpacking of many weight pieces is covered
          Tensor pieces = cuda::device_empty({m, n}, DType::F32);
          cuda::detail::linear_in_pieces(dx, dw, &dbias, pieces, ct, relu, 16 * 1024);
          EXPECT_LT(gpu_test::normalized_error(cuda::to_host(pieces), want),
                    linear_tolerance(m, ct))
              << name(f) << " in pieces, " << ops::compute_type_name(ct);
        }
      }
    }
  }
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(PackedRowsGpu, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
