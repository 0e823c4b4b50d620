#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "offload/weights/weight_store.h"
#include "policy/home_tiers.h"
#include "runtime/core/half.h"
#include "runtime/core/rng.h"
#include "tests/offload/test_support.h"

namespace h2oflex {
namespace {

using testing_support::TempDir;

std::vector<TensorSpec> small_specs() {
  std::vector<TensorSpec> specs;
  auto add = [&](std::string name, Shape shape, DType dtype) {
    const uint64_t bytes = static_cast<uint64_t>(shape_numel(shape)) * dtype_size(dtype);
    specs.push_back({std::move(name), std::move(shape), dtype, bytes});
  };
  add("embed", {300, 64}, DType::F16);
  add("layer0.q", {64, 64}, DType::F32);
  add("layer0.bias", {7}, DType::F16);  // not a multiple of any block
  add("layer0.ffn", {64, 1000}, DType::F16);
  add("layer1.q", {64, 64}, DType::F32);
  add("layer1.ffn", {64, 1000}, DType::BF16);
  add("final_norm", {64}, DType::F32);
  return specs;
}

// Reference bytes of a tensor computed independently of the producer's chunking.
std::vector<unsigned char> tensor_bytes(const TensorSpec& spec, uint64_t seed) {
  const uint64_t n = static_cast<uint64_t>(shape_numel(spec.shape));
  std::vector<float> values(n);
  fill_normal(values.data(), n, seed, stable_hash(spec.name.data(), spec.name.size()), 0, 0.f,
              0.02f);
  std::vector<unsigned char> out(spec.bytes);
  for (uint64_t i = 0; i < n; ++i) {
    if (spec.dtype == DType::F32) {
      std::memcpy(out.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t h = spec.dtype == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

// Produces any byte range element by element (the counter-based generator allows that).
TensorProducer make_producer(uint64_t seed, int* calls = nullptr) {
  return [seed, calls](const TensorSpec& spec, uint64_t byte_offset, std::span<std::byte> out) {
    if (calls) ++*calls;
    const size_t es = dtype_size(spec.dtype);
    const uint64_t first = byte_offset / es, n = out.size() / es;
    std::vector<float> values(n);
    fill_normal(values.data(), n, seed, stable_hash(spec.name.data(), spec.name.size()), first, 0.f,
                0.02f);
    for (uint64_t i = 0; i < n; ++i) {
      if (spec.dtype == DType::F32) {
        std::memcpy(out.data() + 4 * i, &values[i], 4);
      } else {
        const uint16_t h =
            spec.dtype == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    }
  };
}

WeightLayoutOptions small_chunks() {
  WeightLayoutOptions o;
  o.chunk_bytes = 16 << 10;  // several chunks per large tensor
  return o;
}

TEST(WeightLayout, WritesReopensAndVerifies) {
  TempDir dir;
  const auto specs = small_specs();
  bool rebuilt = false;
  auto layout = WeightLayout::open_or_build(dir.path() + "/m", "tiny:dummy:seed=1", specs,
                                            make_producer(1), small_chunks(), &rebuilt);
  EXPECT_TRUE(rebuilt);
  ASSERT_EQ(layout->records().size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightRecord& r = layout->record(i);
    EXPECT_EQ(r.offset % 4096, 0u);
    // The bytes on disk are the reference bytes (read through an independent descriptor).
    EXPECT_TRUE(testing_support::pread_buffered(layout->file().fd(), r.offset, r.spec.bytes) ==
                tensor_bytes(specs[i], 1))
        << r.spec.name;
  }
  IoEngine io;
  layout->verify_all(io);
  layout.reset();

  int calls = 0;
  layout = WeightLayout::open_or_build(dir.path() + "/m", "tiny:dummy:seed=1", specs,
                                       make_producer(1, &calls), small_chunks(), &rebuilt);
  EXPECT_FALSE(rebuilt);
  EXPECT_EQ(calls, 0);  // reused, nothing regenerated
  EXPECT_EQ(layout->find("layer0.ffn"), 3u);
  EXPECT_THROW(layout->find("nope"), InputError);
}

TEST(WeightLayout, ModelKeyOrTensorListMismatchRebuilds) {
  TempDir dir;
  auto specs = small_specs();
  bool rebuilt = false;
  WeightLayout::open_or_build(dir.path(), "tiny:dummy:seed=1", specs, make_producer(1), {},
                              &rebuilt);
  auto layout = WeightLayout::open_or_build(dir.path(), "tiny:dummy:seed=2", specs,
                                            make_producer(2), {}, &rebuilt);
  EXPECT_TRUE(rebuilt);
  EXPECT_EQ(layout->model_key(), "tiny:dummy:seed=2");
  EXPECT_TRUE(testing_support::pread_buffered(layout->file().fd(), layout->record(0).offset,
                                              specs[0].bytes) == tensor_bytes(specs[0], 2));
  layout.reset();
  specs[1].shape = {32, 128};  // same bytes, different shape
  layout = WeightLayout::open_or_build(dir.path(), "tiny:dummy:seed=2", specs, make_producer(2), {},
                                       &rebuilt);
  EXPECT_TRUE(rebuilt);
  EXPECT_EQ(layout->record(1).spec.shape, (Shape{32, 128}));
}

TEST(WeightLayout, CorruptedByteIsDetected) {
  TempDir dir;
  const auto specs = small_specs();
  auto layout = WeightLayout::open_or_build(dir.path(), "k", specs, make_producer(1));
  const WeightRecord victim = layout->record(3);
  layout.reset();
  {
    const int fd = ::open((dir.path() + "/weights.bin").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    unsigned char b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, victim.offset + 1234), 1);
    b ^= 0x10;
    ASSERT_EQ(::pwrite(fd, &b, 1, victim.offset + 1234), 1);
    ::close(fd);
  }
  layout = WeightLayout::open(dir.path());
  IoEngine io;
  try {
    layout->verify_all(io);
    ADD_FAILURE() << "corruption not detected";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("'layer0.ffn'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("weights.bin"), std::string::npos) << e.what();
  }
  // Fetching the tensor with verification on fails the same way, through the handle.
  HostTier host(16 << 20);
  TransferEngine engine;
  WeightStore store(*layout, engine, {nullptr, &host, nullptr},
                    std::vector<TierKind>(specs.size(), TierKind::Disk), true);
  void* dst = host.allocate(victim.spec.bytes);
  EXPECT_THROW(store.fetch(3, Location::in_memory(host, dst), "decode").wait(), IoError);
  EXPECT_NO_THROW(store.fetch(1, Location::in_memory(host, dst), "decode").wait());
  host.free(dst);
}

TEST(WeightStore, MaterializesHomesAndFetchesExactBytes) {
  TempDir dir;
  const auto specs = small_specs();
  auto layout = WeightLayout::open_or_build(dir.path(), "k", specs, make_producer(5));
  CpuDeviceTier device(1 << 20);
  HostTier host(1 << 20);
  DiskTier disk(dir.path(), 1 << 20);
  TransferEngine engine;
  std::vector<uint64_t> sizes;
  for (const auto& s : specs) sizes.push_back(s.bytes);
  const auto homes = assign_home_tiers(sizes, {30, 30, 40});
  {
    WeightStore store(*layout, engine, {&device, &host, &disk}, homes, true);
    store.materialize();
    EXPECT_EQ(disk.used(), store.bytes_on(TierKind::Disk));
    EXPECT_GT(device.used(), 0u);
    EXPECT_GT(host.used(), 0u);
    HostTier scratch(1 << 20);
    for (size_t i = 0; i < specs.size(); ++i) {
      const auto expected = tensor_bytes(specs[i], 5);
      if (homes[i] != TierKind::Disk) {
        ASSERT_NE(store.resident_data(i), nullptr);
        EXPECT_EQ(std::memcmp(store.resident_data(i), expected.data(), expected.size()), 0);
      } else {
        EXPECT_EQ(store.resident_data(i), nullptr);
      }
      void* dst = scratch.allocate(specs[i].bytes + 3);
      char* unaligned = static_cast<char*>(dst) + 3;
      store.fetch(i, Location::in_memory(scratch, unaligned), "prefill").wait();
      EXPECT_EQ(std::memcmp(unaligned, expected.data(), expected.size()), 0) << specs[i].name;
      scratch.free(dst);
    }
    EXPECT_EQ(engine.bytes_moved("prefill", DataKind::Weight, TierKind::Disk, TierKind::Host),
              store.bytes_on(TierKind::Disk));
    EXPECT_EQ(engine.bytes_moved("load", DataKind::Weight, TierKind::Disk, TierKind::Device),
              store.bytes_on(TierKind::Device));
  }
  EXPECT_EQ(device.used(), 0u);
  EXPECT_EQ(host.used(), 0u);
  EXPECT_EQ(disk.used(), 0u);
}

TEST(WeightStore, MaterializeOverBudgetLeavesNothingAllocated) {
  TempDir dir;
  const auto specs = small_specs();
  auto layout = WeightLayout::open_or_build(dir.path(), "k", specs, make_producer(5));
  HostTier host(64 << 10);  // too small for all of them
  TransferEngine engine;
  WeightStore store(*layout, engine, {nullptr, &host, nullptr},
                    std::vector<TierKind>(specs.size(), TierKind::Host), false);
  EXPECT_THROW(store.materialize(), TierBudgetError);
  EXPECT_EQ(host.used(), 0u);
}

// Device-homed tensors produced on the host go up through one pinned staging buffer of the
// largest one's size (what a GPU needs for DMA), which is gone once materialize returns.
TEST(WeightStore, UploadsThroughOnePinnedStagingBuffer) {
  const auto specs = small_specs();
  CpuDeviceTier device(1 << 20, 4096, /*host_addressable=*/false);  // copies in, as on a GPU
  HostTier host(1 << 20);
  TransferEngine engine;
  WeightSource source;
  source.fill = [&specs](size_t i, void* dst) {
    const auto bytes = tensor_bytes(specs[i], 9);
    std::memcpy(dst, bytes.data(), bytes.size());
  };
  WeightStoreSettings settings;
  settings.pin_upload = true;
  uint64_t largest = 0;
  for (const auto& s : specs) largest = std::max(largest, s.bytes);
  {
    WeightStore store(specs, source, engine, {&device, &host, nullptr},
                      std::vector<TierKind>(specs.size(), TierKind::Device), settings);
    store.materialize();
    EXPECT_EQ(host.used(), 0u);                    // the staging buffer is gone
    EXPECT_GE(host.peak(), largest);               // and was one buffer of the largest's size
    EXPECT_LT(host.peak(), largest + (8u << 10));  // (not one per tensor)
    for (size_t i = 0; i < specs.size(); ++i) {
      std::vector<unsigned char> back(specs[i].bytes);
      const Location home = store.home_location(i);
      device.copy_to_host(back.data(), home.ptr, back.size());
      EXPECT_EQ(back, tensor_bytes(specs[i], 9)) << specs[i].name;
    }
  }
  EXPECT_EQ(device.used(), 0u);
}

// Teardown after a device error: freeing fails too, and the store's destructor must neither
// throw (that would end the process during unwinding) nor stop releasing the rest.
TEST(WeightStore, TeardownWithFailingFreesDoesNotThrow) {
  class FailingFrees final : public DeviceMemoryTier {
   public:
    FailingFrees() : DeviceMemoryTier(1 << 20, 4096) {}
    ~FailingFrees() override {
      failing = false;
      release_all();
    }
    bool is_host_addressable() const override { return true; }
    bool failing = false;
    int frees_tried = 0;

   private:
    void* raw_allocate(size_t bytes) override { return std::aligned_alloc(4096, bytes); }
    void raw_free(void* ptr, size_t /*bytes*/) override {
      ++frees_tried;
      std::free(ptr);  // gone either way: a leak would hide nothing but trouble the sanitizers
      if (failing) throw InternalError("cudaFree failed: an illegal memory access (planted)");
    }
  };
  const auto specs = small_specs();
  FailingFrees device;
  TransferEngine engine;
  WeightSource source;
  source.fill = [&specs](size_t i, void* dst) { std::memset(dst, 1, specs[i].bytes); };
  {
    WeightStore store(specs, source, engine, {&device, nullptr, nullptr},
                      std::vector<TierKind>(specs.size(), TierKind::Device), {});
    store.materialize();
    device.failing = true;
  }  // the destructor runs here
  EXPECT_EQ(device.frees_tried, static_cast<int>(specs.size()));
}

TEST(Placement, SharesHonouredWithinOneTensor) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<uint64_t> sizes(5 + rng() % 200);
    uint64_t total = 0, largest = 0;
    for (auto& s : sizes) {
      s = 1 + rng() % 100000;
      total += s;
      largest = std::max(largest, s);
    }
    const double d = static_cast<double>(rng() % 60), h = static_cast<double>(rng() % 40);
    const TierShares shares{d, h, 100 - d - h};
    const auto homes = assign_home_tiers(sizes, shares);
    ASSERT_EQ(homes.size(), sizes.size());
    uint64_t per[3] = {0, 0, 0};
    for (size_t i = 0; i < sizes.size(); ++i) per[static_cast<int>(homes[i])] += sizes[i];
    const double target[3] = {d, h, 100 - d - h};
    for (int t = 0; t < 3; ++t) {
      EXPECT_LE(std::fabs(per[t] - target[t] / 100 * total), static_cast<double>(largest))
          << "tier " << t << " trial " << trial;
    }
    // Model order is kept: device tensors first, then host, then disk.
    EXPECT_TRUE(std::is_sorted(homes.begin(), homes.end()));
  }
  const std::vector<uint64_t> sizes = {10, 10};
  EXPECT_THROW(assign_home_tiers(sizes, {50, 40, 20}), InputError);
  EXPECT_THROW(assign_home_tiers(sizes, {-10, 60, 50}), InputError);
}

}  // namespace
}  // namespace h2oflex
