// CUDA runtime pieces: error macros, device probe, Philox parity, streams/events, the GPU memory
// tier and pinned registration. The first three need no GPU and always run.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <sys/mman.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/device_pinning.h"
#include "offload/tiers/cuda_device_tier.h"
#include "runtime/core/rng.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/philox_device.h"
#include "runtime/cuda/streams.h"

namespace h2oflex {
namespace {

cudaError_t failing_call() {
  return cudaErrorInvalidValue;
}
cublasStatus_t failing_blas_call() {
  return CUBLAS_STATUS_NOT_INITIALIZED;
}

TEST(CudaCheck, ThrowsWithCallFileLineAndErrorText) {
  try {
    CUDA_CHECK(failing_call());
    FAIL() << "CUDA_CHECK did not throw";
  } catch (const cuda::CudaError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("failing_call()"), std::string::npos) << msg;
    EXPECT_NE(msg.find("runtime_test.cc:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cudaErrorInvalidValue"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
}

TEST(CudaCheck, CublasThrowsWithStatusName) {
  try {
    CUBLAS_CHECK(failing_blas_call());
    FAIL() << "CUBLAS_CHECK did not throw";
  } catch (const InternalError& e) {  // CudaError is an InternalError
    const std::string msg = e.what();
    EXPECT_NE(msg.find("failing_blas_call()"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << msg;
  }
}

TEST(CudaDevice, ProbeNeverThrowsAndExplainsAbsence) {
  bool available = false;
  EXPECT_NO_THROW(available = cuda::cuda_device_available());
  if (!available) {
    EXPECT_FALSE(cuda::cuda_unavailable_reason().empty());
  } else {
    EXPECT_TRUE(cuda::cuda_unavailable_reason().empty());
    EXPECT_FALSE(cuda::device_description().empty());
  }
}

TEST(Philox, DeviceWordsMatchHost) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const uint64_t key = 0x0123456789abcdefull, hi = 99, first = (uint64_t{1} << 32) - 10;
  const std::vector<uint32_t> words = cuda::philox_words_on_device(key, hi, first, 1000);
  ASSERT_EQ(words.size(), 4000u);
  for (uint64_t i = 0; i < 1000; ++i) {
    const auto want = philox4x32(key, hi, first + i);
    for (int j = 0; j < 4; ++j) ASSERT_EQ(words[4 * i + j], want[j]) << i;
  }
}

TEST(CudaStreams, NamedStreamsAreDistinctAndEventsOrderThem) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  auto& s = cuda::streams();
  EXPECT_NE(s.get(cuda::StreamKind::Compute), s.get(cuda::StreamKind::WeightLoad));
  EXPECT_NE(s.get(cuda::StreamKind::CacheLoad), s.get(cuda::StreamKind::CacheStore));
  EXPECT_EQ(cuda::stream_name(cuda::StreamKind::CacheStore), "cache_store");
  EXPECT_EQ(cuda::current_stream(), s.get(cuda::StreamKind::Compute));
  {
    cuda::StreamScope scope(s.get(cuda::StreamKind::WeightLoad));
    EXPECT_EQ(cuda::current_stream(), s.get(cuda::StreamKind::WeightLoad));
  }
  EXPECT_EQ(cuda::current_stream(), s.get(cuda::StreamKind::Compute));

  // Load on one stream, consume on another after an event: the bytes must have arrived.
  const int64_t n = 1 << 20;
  Tensor host = gpu_test::random_tensor({n}, DType::F32, 1);
  Tensor dev = cuda::device_empty({n}, DType::F32);
  Tensor back = Tensor::zeros({n}, DType::F32);
  cuda::Event loaded(true), start(true);
  start.record(cuda::StreamKind::WeightLoad);
  cuda::copy_async(dev, host, s.get(cuda::StreamKind::WeightLoad));
  loaded.record(cuda::StreamKind::WeightLoad);
  loaded.wait(cuda::StreamKind::Compute);
  cuda::copy_async(back, dev, s.get(cuda::StreamKind::Compute));
  s.synchronize(cuda::StreamKind::Compute);
  EXPECT_TRUE(loaded.ready());
  EXPECT_GE(loaded.elapsed_ms(start), 0.0f);
  EXPECT_EQ(std::memcmp(back.raw(), host.raw(), host.nbytes()), 0);
}

// The GPU memory tier: the budget is enforced (a configuration problem, exit code 2), freed
// bytes return to it, and bytes copied in come back out.
TEST(CudaDeviceTier, BudgetIsEnforcedAndCopiesRoundTrip) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  CudaDeviceTier tier(3 << 20);
  EXPECT_FALSE(tier.is_host_addressable());
  void* a = tier.allocate(1 << 20, "a");
  void* b = tier.allocate((2 << 20) - 100, "b");  // rounded up to the tier's alignment
  EXPECT_EQ(tier.used(), 3u << 20);
  try {
    tier.allocate(1, "one byte too many");
    FAIL() << "allocation beyond the budget succeeded";
  } catch (const TierBudgetError& e) {
    EXPECT_NE(std::string(e.what()).find("one byte too many"), std::string::npos) << e.what();
  }
  std::vector<int32_t> in(1 << 18), out(1 << 18, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(i * 7919);
  tier.copy_from_host(a, in.data(), in.size() * 4);
  tier.copy_to_host(out.data(), a, out.size() * 4);
  EXPECT_EQ(out, in);
  tier.free(a);
  tier.free(b);
  EXPECT_EQ(tier.used(), 0u);
  EXPECT_EQ(tier.peak(), 3u << 20);
}

TEST(CudaPinned, RegisteredMmapBufferRoundTrips) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const size_t bytes = 4 << 20;
  void* buf = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(buf, MAP_FAILED);
  cuda::register_pinned(buf, bytes);
  unsigned int flags = 0;
  EXPECT_EQ(cudaHostGetFlags(&flags, buf), cudaSuccess);
  Tensor pinned = Tensor::wrap(buf, {static_cast<int64_t>(bytes / 4)}, DType::F32);
  fill_normal(pinned.data<float>(), bytes / 4, 5, 6, 0, 0.0f, 1.0f);
  Tensor dev = cuda::to_device(pinned);
  std::memset(buf, 0, bytes);
  cudaStream_t stream = cuda::current_stream();
  cuda::copy_async(pinned, dev, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(pinned.data<float>()[12345], normal_at(5, 6, 12345));
  cuda::unregister_pinned(buf);
  EXPECT_THROW(cuda::unregister_pinned(buf), cuda::CudaError);  // no longer registered
  munmap(buf, bytes);
}

// A launch check names the kernel it follows. The planted error is a failed allocation, which
// the runtime records as the thread's last error just as it records a bad launch.
TEST(CudaCheck, LaunchCheckNamesTheKernel) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  void* never = nullptr;
  ASSERT_NE(cudaMalloc(&never, ~size_t{0} >> 2), cudaSuccess);
  try {
    CUDA_CHECK_LAUNCH("planted_kernel");
    FAIL() << "no error reported";
  } catch (const cuda::CudaError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("launching planted_kernel failed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("runtime_test.cc:"), std::string::npos) << msg;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the check consumed the error
}

// The KV store's path out of GPU memory: scattered records leave packed, as the CPU packs them.
TEST(CudaDeviceTier, GatherToHostPacksThePieces) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  CudaDeviceTier tier(8 << 20);
  const size_t n = 1 << 20;
  std::vector<char> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<char>(i * 131 + 7);
  void* dev = tier.allocate(n, "records");
  tier.copy_from_host(dev, in.data(), n);
  ByteRanges ranges;
  for (uint64_t off = 512; off + 512 <= n; off += 4096 * 3) ranges.emplace_back(off, 512);
  const uint64_t packed = total_length(ranges);
  std::vector<char> want(packed), got(packed, 0);
  cpu::gather_ranges(in.data(), ranges, want.data());
  tier.gather_to_host(got.data(), dev, ranges);
  EXPECT_EQ(got, want);
  tier.free(dev);
}

// Teardown after a device error: unpinning fails, and must not throw (it runs in destructors,
// where a throw would end the process and hide the error being reported).
TEST(CudaPinned, FailedUnregisterDoesNotThrow) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const std::unique_ptr<PinListener> listener = make_device_pin_listener();
  ASSERT_NE(listener, nullptr);
  const size_t bytes = 1 << 20;
  void* buf = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(buf, MAP_FAILED);
  listener->register_pinned(buf, bytes);
  listener->unregister_pinned(buf, bytes);
  unsigned int flags = 0;
  EXPECT_NE(cudaHostGetFlags(&flags, buf), cudaSuccess);  // no longer registered
  cudaGetLastError();
  listener->unregister_pinned(buf, bytes);  // fails inside; returns normally
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  munmap(buf, bytes);
}

}  // namespace
}  // namespace h2oflex

#else  // built without the CUDA backend

TEST(CudaBackend, NotBuilt) {
  GTEST_SKIP() << "no CUDA device: this build has no CUDA backend (configure with H2OFLEX_CUDA=ON)";
}

#endif
