// Devices with an index: ops on a cuda:1 tensor run on device 1 (its memory, streams, cuBLAS
// handle and scratch) and match the CPU; each device owns its streams; the caller's current device
// survives all of it. The two-device tests skip on a machine with fewer than two GPUs.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <cstring>

#include "offload/tiers/cuda_device_tier.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/streams.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/scratch.h"

namespace h2oflex {
namespace {

using gpu_test::normalized_error;
using gpu_test::random_tensor;

#define H2OFLEX_REQUIRE_TWO_CUDA_DEVICES()                                               \
  do {                                                                                   \
    H2OFLEX_REQUIRE_CUDA_DEVICE();                                                       \
    if (cuda::device_count() < 2) {                                                      \
      GTEST_SKIP() << "needs 2 CUDA devices, this machine has " << cuda::device_count(); \
    }                                                                                    \
  } while (0)

// The device whose memory `ptr` points into.
int device_of(const void* ptr) {
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, ptr));
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  return attr.device;
}

int stream_device(cudaStream_t stream) {
  int device = -1;
  CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

TEST(DeviceGuard, SwitchesForTheScopeAndRestores) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const int before = cuda::current_device();
  {
    const cuda::DeviceGuard guard(before);  // already current: nothing to switch
    EXPECT_EQ(cuda::current_device(), before);
  }
  EXPECT_EQ(cuda::current_device(), before);
  EXPECT_THROW({ const cuda::DeviceGuard bad(cuda::device_count()); }, cuda::CudaError);
  EXPECT_EQ(cuda::current_device(), before);
  if (cuda::device_count() >= 2) {
    const int other = before == 0 ? 1 : 0;
    {
      const cuda::DeviceGuard guard(other);
      EXPECT_EQ(cuda::current_device(), other);
    }
    EXPECT_EQ(cuda::current_device(), before);
  }
}

TEST(DeviceMemory, TensorsCarryTheDeviceTheyAreOn) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const Tensor t = ops::empty({16}, DType::F32, Device::CUDA);
  EXPECT_EQ(t.device(), Device::cuda(0));
  EXPECT_EQ(device_of(t.raw()), 0);
  EXPECT_THROW(CudaDeviceTier(1 << 20, cuda::device_count()), InputError);
}

TEST(MultiDevice, StreamsOfEachDeviceAreDistinctObjects) {
  H2OFLEX_REQUIRE_TWO_CUDA_DEVICES();
  const int before = cuda::current_device();
  cuda::Streams& s0 = cuda::streams(0);
  cuda::Streams& s1 = cuda::streams(1);
  EXPECT_EQ(cuda::current_device(), before);  // creating device 1's streams switched back
  EXPECT_NE(&s0, &s1);
  EXPECT_EQ(&cuda::streams(1), &s1);  // created once, then the same object
  EXPECT_EQ(s0.device(), 0);
  EXPECT_EQ(s1.device(), 1);
  for (int k = 0; k < cuda::kNumStreamKinds; ++k) {
    const auto kind = static_cast<cuda::StreamKind>(k);
    EXPECT_NE(s0.get(kind), s1.get(kind)) << cuda::stream_name(kind);
    EXPECT_EQ(stream_device(s0.get(kind)), 0) << cuda::stream_name(kind);
    EXPECT_EQ(stream_device(s1.get(kind)), 1) << cuda::stream_name(kind);
  }
  {
    const cuda::DeviceGuard guard(1);
    EXPECT_EQ(&cuda::streams(), &s1);
    EXPECT_EQ(cuda::current_stream(), s1.get(cuda::StreamKind::Compute));
    // A scope over a stream of device 0 does not leak onto device 1's ops.
    const cuda::StreamScope scope(s0.get(cuda::StreamKind::WeightLoad));
    EXPECT_EQ(cuda::current_stream(), s1.get(cuda::StreamKind::Compute));
  }
  {
    const cuda::DeviceGuard guard(0);
    EXPECT_EQ(cuda::current_stream(), s0.get(cuda::StreamKind::Compute));
  }
}

TEST(MultiDevice, OpsOnCuda1RunThereAndMatchTheCpu) {
  H2OFLEX_REQUIRE_TWO_CUDA_DEVICES();
  const Device gpu1 = Device::cuda(1);
  const int before = cuda::current_device();
  const int64_t m = 7, k = 96, n = 40;
  const Tensor x = random_tensor({m, k}, DType::F32, 1);
  const Tensor w = random_tensor({n, k}, DType::F32, 2, 0.1f);
  const Tensor bias = random_tensor({n}, DType::F32, 3);
  const Tensor gamma = random_tensor({n}, DType::F32, 4);
  const Tensor beta = random_tensor({n}, DType::F32, 5);

  Tensor want = Tensor::zeros({m, n}, DType::F32);
  cpu::linear(x, w, &bias, want, ops::ComputeType::F32, /*relu=*/true);
  cpu::layer_norm(want, gamma, beta, 1e-5f, want);

  // On cuda:1, through the dispatcher: a cuBLAS GEMM, kernels and op scratch of device 1.
  const Tensor dx = ops::on_device(x, gpu1), dw = ops::on_device(w, gpu1);
  const Tensor dbias = ops::on_device(bias, gpu1), dgamma = ops::on_device(gamma, gpu1);
  const Tensor dbeta = ops::on_device(beta, gpu1);
  Tensor out = ops::scratch(ops::Scratch::Projection, {m, n}, DType::F32, gpu1);
  EXPECT_EQ(out.device(), gpu1);
  EXPECT_EQ(device_of(dx.raw()), 1);
  EXPECT_EQ(device_of(out.raw()), 1);
  ops::linear(dx, dw, &dbias, out, ops::ComputeType::F32, /*relu=*/true);
  ops::layer_norm(out, dgamma, dbeta, 1e-5f, out);
  ops::synchronize(gpu1);
  EXPECT_EQ(cuda::current_device(), before);
  EXPECT_LE(normalized_error(ops::on_device(out, Device::CPU), want), 1e-5);

  // Device 0's scratch of the same purpose is another buffer, on device 0.
  const Tensor out0 = ops::scratch(ops::Scratch::Projection, {m, n}, DType::F32, Device::CUDA);
  EXPECT_NE(out0.raw(), out.raw());
  EXPECT_EQ(device_of(out0.raw()), 0);

  // cuda:1 -> cuda:0, ordered after device 1's work; the result then lives on device 0.
  Tensor on0 = ops::empty({m, n}, DType::F32, Device::CUDA);
  ops::copy(out, on0);
  EXPECT_EQ(device_of(on0.raw()), 0);
  EXPECT_LE(normalized_error(ops::on_device(on0, Device::CPU), want), 1e-5);
  EXPECT_EQ(cuda::current_device(), before);
}

TEST(MultiDevice, TierAllocatesOnItsDevice) {
  H2OFLEX_REQUIRE_TWO_CUDA_DEVICES();
  const int before = cuda::current_device();
  CudaDeviceTier tier(1 << 20, 1);
  EXPECT_EQ(tier.device(), Device::cuda(1));
  void* p = tier.allocate(4096, "on cuda:1");
  EXPECT_EQ(device_of(p), 1);
  const Tensor host = random_tensor({1024}, DType::F32, 6);
  Tensor back = Tensor::zeros({1024}, DType::F32);
  tier.copy_from_host(p, host.raw(), host.nbytes());
  tier.copy_to_host(back.raw(), p, back.nbytes());
  EXPECT_EQ(std::memcmp(back.raw(), host.raw(), host.nbytes()), 0);
  tier.free(p);
  EXPECT_EQ(cuda::current_device(), before);
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(MultiDevice, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
