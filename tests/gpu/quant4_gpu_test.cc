// The CUDA 4-bit kernels against their CPU twins: the packed bytes bit for bit, and the
// dequantized values bit for bit in every output type.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <cstring>
#include <vector>

#include "runtime/core/quant4.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cuda/cuda_ops.h"
#include "runtime/ops/compute_choice.h"
#include "runtime/ops/ops.h"

namespace h2oflex {
namespace {

using gpu_test::random_tensor;
using ops::ComputeType;

TEST(Quant4Gpu, PackedBytesAndValuesEqualTheCpuTwin) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (int64_t n : {1, 7, 64, 65, 128, 200, 4096}) {
    Tensor x = random_tensor({37, n}, DType::F32, static_cast<uint64_t>(n), 0.5f);
    // Edge groups: constant, zeros of both signs, one outlier.
    for (int64_t i = 0; i < n; ++i) {
      x.data<float>()[i] = 0.75f;
      x.data<float>()[n + i] = i % 2 == 0 ? 0.0f : -0.0f;
    }
    x.data<float>()[2 * n] = 1e4f;
    const int64_t rb = quant4::row_bytes(n);
    Tensor packed = Tensor::empty({37, rb}, DType::U8);
    cpu::quantize4(x, packed);
    Tensor dx = cuda::to_device(x);
    Tensor dpacked = ops::empty({37, rb}, DType::U8, Device::CUDA);
    ops::quantize4(dx, dpacked);
    const Tensor back = cuda::to_host(dpacked);
    EXPECT_EQ(std::memcmp(back.raw(), packed.raw(), packed.nbytes()), 0) << "n " << n;
    for (DType t : {DType::F32, DType::BF16, DType::F16}) {
      Tensor y = Tensor::empty({37, n}, t);
      cpu::dequantize4(packed, y);
      Tensor dy = ops::empty({37, n}, t, Device::CUDA);
      ops::dequantize4(dpacked, dy);
      const Tensor dyh = cuda::to_host(dy);
      EXPECT_EQ(std::memcmp(dyh.raw(), y.raw(), y.nbytes()), 0)
          << "n " << n << " " << dtype_name(t);
    }
  }
}

TEST(Quant4Gpu, LinearOnCompressedRowsMatchesTheCpu) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int64_t m = 9, k = 1000, n = 700;
  const Tensor w = random_tensor({n, k}, DType::F32, 1, 0.05f);
  const Tensor x = random_tensor({m, k}, DType::F32, 2);
  Tensor packed =
      Tensor::empty({n, quant4::row_bytes(k)}, DType::U8).as_packed(PackedFormat::Q4G64);
  cpu::quantize4(w, packed);
  for (ComputeType ct : {ComputeType::F32, ComputeType::BF16, ComputeType::F16}) {
    Tensor want = Tensor::empty({m, n}, DType::F32);
    cpu::linear(x, packed, nullptr, want, ct);
    Tensor got = ops::empty({m, n}, DType::F32, Device::CUDA);
    // Small operand pieces: the dequantization of many weight pieces is covered.
    cuda::detail::linear_in_pieces(cuda::to_device(x), cuda::to_device(packed), nullptr, got, ct,
                                   false, 64 * 1024);
    EXPECT_LT(gpu_test::normalized_error(cuda::to_host(got), want),
              gpu_test::tolerance(ops::operand_dtype(ct)))
        << ops::compute_type_name(ct);
  }
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(Quant4Gpu, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
