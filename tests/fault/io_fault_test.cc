#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "offload/io/aligned_buffer.h"
#include "offload/io/io_engine.h"
#include "offload/transfer/transfer_engine.h"
#include "offload/weights/weight_store.h"
#include "tests/offload/test_support.h"

namespace h2oflex {
namespace {

using testing_support::random_bytes;
using testing_support::TempDir;

// EIO on the Nth request.
struct EioOnNth : IoFaultHook {
  explicit EioOnNth(uint64_t n) : n(n) {}
  int on_complete(const IoRequestInfo& r, int res) override { return r.sequence == n ? -EIO : res; }
  uint64_t n;
};

// ENOSPC once `limit` bytes of writes went through.
struct DiskFullAfter : IoFaultHook {
  explicit DiskFullAfter(uint64_t limit) : limit(limit) {}
  int on_complete(const IoRequestInfo& r, int res) override {
    if (!r.is_write || res < 0) return res;
    if (written >= limit) return -ENOSPC;
    written += static_cast<uint64_t>(res);
    return res;
  }
  uint64_t limit, written = 0;
};

// The file appears to end at `eof`: reads across it are short, reads beyond it return 0.
struct EndsAt : IoFaultHook {
  explicit EndsAt(uint64_t eof) : eof(eof) {}
  int on_complete(const IoRequestInfo& r, int res) override {
    if (r.is_write || res < 0) return res;
    if (r.offset >= eof) return 0;
    return static_cast<int>(std::min<uint64_t>(res, eof - r.offset));
  }
  uint64_t eof;
};

// Transient trouble: every request first comes back short (half) or -EAGAIN.
struct ShortAndAgain : IoFaultHook {
  int on_complete(const IoRequestInfo& r, int res) override {
    if (res <= 0) return res;
    if (r.sequence % 3 == 0) return -EAGAIN;
    if (r.sequence % 3 == 1 && res >= 8192) return res / 2 / 4096 * 4096;
    return res;
  }
};

struct Fixture {
  TempDir dir;
  HostTier host{64 << 20};
  DiskTier disk{dir.path(), 64 << 20};
  std::unique_ptr<TransferEngine> engine;
  Fixture() {
    TransferEngineOptions o;
    o.io.chunk_bytes = 64 << 10;
    o.io.queue_depth = 8;
    engine = std::make_unique<TransferEngine>(o);
    engine->use_pinned_memory(host);
  }
};

void expect_message(const std::exception& e, std::initializer_list<std::string> parts) {
  const std::string msg = e.what();
  for (const auto& p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' in: " << msg;
}

TEST(IoFaults, EioOnNthRequestNamesFileOffsetLengthAndErrno) {
  Fixture f;
  const size_t n = 1 << 20;  // 16 requests of 64 KiB
  void* buf = f.host.allocate_pinned(n);
  const uint64_t off = f.disk.allocate(n);
  f.engine->set_fault_hook(std::make_shared<EioOnNth>(5));
  auto h = f.engine->copy(QueueId::CacheStore, Location::in_memory(f.host, buf),
                          Location::on_disk(f.disk, off), n, {"decode", DataKind::Kv});
  try {
    h.wait();
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    expect_message(e, {f.disk.path(), "write of 65536 bytes at offset", "Input/output error"});
  }
  // The queue keeps working after the failure (no hang, nothing stuck).
  f.engine->set_fault_hook(nullptr);
  EXPECT_NO_THROW(f.engine
                      ->copy(QueueId::CacheStore, Location::in_memory(f.host, buf),
                             Location::on_disk(f.disk, off), n, {"decode", DataKind::Kv})
                      .wait());
  f.host.free(buf);
  f.disk.free(off);
  EXPECT_EQ(f.host.used(), 0u);
  EXPECT_EQ(f.disk.used(), 0u);
}

TEST(IoFaults, EnospcOnWrite) {
  Fixture f;
  const size_t n = 2 << 20;
  void* buf = f.host.allocate(n);
  const uint64_t off = f.disk.allocate(n);
  f.engine->set_fault_hook(std::make_shared<DiskFullAfter>(n / 2));
  try {
    f.engine->copy_sync(Location::in_memory(f.host, buf), Location::on_disk(f.disk, off + 1), n - 1,
                        {"decode", DataKind::Kv});
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    expect_message(e, {f.disk.path(), "write of", "No space left on device"});
  }
  f.host.free(buf);
  f.disk.free(off);
}

TEST(IoFaults, ShortReadAtEndOfFileIsAnError) {
  for (uint64_t eof : {uint64_t{300} << 10, (uint64_t{300} << 10) + 100}) {
    Fixture f;
    const size_t n = 1 << 20;
    void* buf = f.host.allocate(n);
    const uint64_t off = f.disk.allocate(n);
    f.engine->set_fault_hook(std::make_shared<EndsAt>(off + eof));
    try {
      f.engine
          ->copy(QueueId::CacheLoad, Location::on_disk(f.disk, off),
                 Location::in_memory(f.host, buf), n, {"decode", DataKind::Kv})
          .wait();
      ADD_FAILURE() << "no error";
    } catch (const IoError& e) {
      expect_message(e, {f.disk.path(), "unexpected end of file", "read of"});
    }
    f.host.free(buf);
    f.disk.free(off);
  }
}

TEST(IoFaults, ShortTransfersAndEagainAreResubmitted) {
  Fixture f;
  const size_t n = (3 << 20) + 5;
  const auto data = random_bytes(n, 11);
  char* a = static_cast<char*>(f.host.allocate_pinned(n));
  char* b = static_cast<char*>(f.host.allocate(n));
  std::memcpy(a, data.data(), n);
  const uint64_t off = f.disk.allocate(n + 4096);
  f.engine->set_fault_hook(std::make_shared<ShortAndAgain>());
  f.engine
      ->copy(QueueId::CacheStore, Location::in_memory(f.host, a),
             Location::on_disk(f.disk, off + 7), n, {"decode", DataKind::Kv})
      .wait();
  f.engine
      ->copy(QueueId::CacheLoad, Location::on_disk(f.disk, off + 7), Location::in_memory(f.host, b),
             n, {"decode", DataKind::Kv})
      .wait();
  EXPECT_EQ(std::memcmp(b, data.data(), n), 0);
  f.host.free(a);
  f.host.free(b);
}

// Counts the requests in flight at each completion (the completing one included).
struct InFlightCounter : IoFaultHook {
  int on_complete(const IoRequestInfo&, int res) override {
    most = std::max<uint64_t>(most, io->requests_submitted() - before - completed);
    ++completed;
    return res;
  }
  const IoEngine* io = nullptr;
  uint64_t before = 0;  // requests the engine had submitted before
  uint64_t completed = 0, most = 0;
};

// With max_in_flight_bytes, small requests are capped by their bytes, not only by their count
// (a cache load of many 128 KiB records), and a request larger than the cap still goes alone.
TEST(IoFaults, InFlightBytesStayUnderTheCap) {
  TempDir dir;
  auto file = DiskFile::open(dir.path() + "/f", FileOpen::CreateTruncate);
  const size_t piece = 64 << 10, pieces = 64, n = piece * pieces;
  AlignedBuffer out(n), in(n);
  const auto data = random_bytes(n, 9);
  std::memcpy(out.data(), data.data(), n);
  std::vector<IoSegment> segments;
  for (size_t i = 0; i < pieces; ++i) segments.push_back({i * piece, in.data() + i * piece, piece});

  for (const uint64_t cap : {uint64_t{0}, uint64_t{256} << 10}) {
    IoEngineOptions o;
    o.queue_depth = 32;
    o.max_in_flight_bytes = cap;
    IoEngine io(o);
    io.write(*file, 0, out.data(), n);
    std::memset(in.data(), 0, n);
    auto hook = std::make_shared<InFlightCounter>();
    hook->io = &io;
    hook->before = io.requests_submitted();
    io.set_fault_hook(hook);
    io.read_scattered(*file, segments);
    EXPECT_EQ(std::memcmp(in.data(), data.data(), n), 0);
    EXPECT_EQ(hook->completed, pieces);
    if (cap == 0) {
      EXPECT_EQ(hook->most, 32u);  // the depth: all submitted before the first completion
    } else {
      EXPECT_EQ(hook->most, 4u);  // 256 KiB of 64 KiB requests
    }
  }
  IoEngineOptions small;
  small.chunk_bytes = 1 << 20;
  small.max_in_flight_bytes = 64 << 10;
  IoEngine io(small);
  std::memset(in.data(), 0, n);
  io.read(*file, 0, in.data(), n);  // 1 MiB requests under a 64 KiB cap: one at a time
  EXPECT_EQ(std::memcmp(in.data(), data.data(), n), 0);
}

// Refuses the first request that carries an I/O priority, as a kernel does for the real-time
// class without CAP_SYS_ADMIN / CAP_SYS_NICE; `seen` counts the requests completed.
struct RefusePriorityOnce : IoFaultHook {
  int on_complete(const IoRequestInfo&, int res) override {
    ++seen;
    return seen == 1 ? -EPERM : res;
  }
  int seen = 0;
};

// A priority the process may not use is dropped and the transfer completes without it; without
// a priority, EPERM is an error like any other.
TEST(IoFaults, APriorityTheKernelRefusesIsDropped) {
  TempDir dir;
  auto file = DiskFile::open(dir.path() + "/f", FileOpen::CreateTruncate);
  const size_t n = 1 << 20;
  AlignedBuffer out(n), in(n);
  const auto data = random_bytes(n, 5);
  std::memcpy(out.data(), data.data(), n);
  IoEngineOptions o;
  o.chunk_bytes = 256 << 10;
  o.ioprio_class = kIoprioClassRealTime;
  IoEngine io(o);
  auto hook = std::make_shared<RefusePriorityOnce>();
  io.set_fault_hook(hook);
  io.write(*file, 0, out.data(), n);
  EXPECT_EQ(io.ioprio_class(), 0);
  EXPECT_EQ(hook->seen, 5);  // four chunks, the refused one twice
  io.read(*file, 0, in.data(), n);
  EXPECT_EQ(std::memcmp(in.data(), data.data(), n), 0);

  IoEngine plain;
  plain.set_fault_hook(std::make_shared<RefusePriorityOnce>());
  EXPECT_THROW(plain.read(*file, 0, in.data(), n), IoError);
}

TEST(IoFaults, FailedMaterializeFreesEverything) {
  TempDir dir;
  std::vector<TensorSpec> specs;
  for (int i = 0; i < 6; ++i)
    specs.push_back({detail::concat("w", i), {256, 256}, DType::F32, 256 * 256 * 4});
  auto producer = [](const TensorSpec&, uint64_t, std::span<std::byte> out) {
    std::memset(out.data(), 0x5a, out.size());
  };
  auto layout = WeightLayout::open_or_build(dir.path(), "k", specs, producer);
  CpuDeviceTier device(16 << 20);
  HostTier host(16 << 20);
  TransferEngineOptions o;
  o.io.chunk_bytes = 64 << 10;
  TransferEngine engine(o);
  engine.set_fault_hook(std::make_shared<EioOnNth>(10));
  std::vector<TierKind> homes = {TierKind::Device, TierKind::Device, TierKind::Host,
                                 TierKind::Host,   TierKind::Host,   TierKind::Disk};
  WeightStore store(*layout, engine, {&device, &host, nullptr}, homes, true);
  try {
    store.materialize();
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    expect_message(e, {"weights.bin", "Input/output error", "offset"});
  }
  EXPECT_EQ(device.used(), 0u);
  EXPECT_EQ(host.used(), 0u);
}

TEST(IoFaults, RealTruncatedLayoutFile) {
  TempDir dir;
  std::vector<TensorSpec> specs = {{"a", {1000, 100}, DType::F16, 200000},
                                   {"b", {1000, 300}, DType::F16, 600000}};
  auto producer = [](const TensorSpec&, uint64_t, std::span<std::byte> out) {
    std::memset(out.data(), 0x33, out.size());
  };
  auto layout = WeightLayout::open_or_build(dir.path(), "k", specs, producer);
  const std::string data = dir.path() + "/weights.bin";
  const uint64_t b_offset = layout->record(1).offset;
  // Cut the file in the middle of tensor b while the layout is open.
  ASSERT_EQ(::truncate(data.c_str(), static_cast<off_t>(b_offset + 100000)), 0);
  HostTier host(4 << 20);
  TransferEngine engine;
  WeightStore store(*layout, engine, {nullptr, &host, nullptr}, {TierKind::Disk, TierKind::Disk},
                    false);
  void* dst = host.allocate(600000);
  try {
    store.fetch(1, Location::in_memory(host, dst), "decode").wait();
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    expect_message(e, {data, "unexpected end of file", "offset"});
  }
  EXPECT_NO_THROW(store.fetch(0, Location::in_memory(host, dst), "decode").wait());
  host.free(dst);
  layout.reset();
  // Opening the layout again reports the truncation; open_or_build rebuilds it.
  try {
    WeightLayout::open(dir.path());
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    expect_message(e, {data, "truncated"});
  }
  bool rebuilt = false;
  layout = WeightLayout::open_or_build(dir.path(), "k", specs, producer, {}, &rebuilt);
  EXPECT_TRUE(rebuilt);
  IoEngine io;
  layout->verify_all(io);
}

// A full disk while the layout is written: an IoError, and no partial data file left to fill the
// disk (issue 14, defect 7).
TEST(IoFaults, EnospcWhileWritingALayoutLeavesNoFile) {
  TempDir dir;
  std::vector<TensorSpec> specs = {{"a", {1000, 100}, DType::F16, 200000},
                                   {"b", {1000, 300}, DType::F16, 600000}};
  auto producer = [](const TensorSpec&, uint64_t, std::span<std::byte> out) {
    std::memset(out.data(), 0x33, out.size());
  };
  WeightLayoutOptions options;
  options.chunk_bytes = 64 << 10;
  options.fault_hook = std::make_shared<DiskFullAfter>(300000);
  const std::string layout_dir = dir.path() + "/layout";
  try {
    WeightLayout::open_or_build(layout_dir, "k", specs, producer, options);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    expect_message(e, {"No space left on device"});
    // The CLI adds "I/O error: " itself; the message must not say it too (defect 17).
    EXPECT_EQ(std::string(e.what()).find("I/O error"), std::string::npos) << e.what();
  }
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(layout_dir)) {
    left.push_back(e.path().filename().string());
  }
  EXPECT_TRUE(left.empty()) << "left behind: " << left.front();
  // With room again the same call builds it.
  bool rebuilt = false;
  auto layout = WeightLayout::open_or_build(layout_dir, "k", specs, producer, {}, &rebuilt);
  EXPECT_TRUE(rebuilt);
  IoEngine io;
  layout->verify_all(io);
}

// A build holds the directory's lock, so a second run waits and then reuses the layout instead
// of writing the same file at once (issue 14, defect 15).
TEST(IoFaults, LayoutBuildHoldsTheDirectoryLock) {
  TempDir dir;
  const std::string layout_dir = dir.path() + "/layout";
  std::vector<TensorSpec> specs = {{"a", {64, 64}, DType::F32, 64 * 64 * 4}};
  bool locked_while_building = false;
  std::atomic<int> second_produced{0};
  std::thread second;
  auto producer = [&](const TensorSpec&, uint64_t, std::span<std::byte> out) {
    std::memset(out.data(), 0x11, out.size());
    if (second.joinable()) return;
    const int fd = ::open(layout_dir.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    locked_while_building = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    second = std::thread([&] {
      bool rebuilt = true;
      WeightLayout::open_or_build(
          layout_dir, "k", specs,
          [&](const TensorSpec&, uint64_t, std::span<std::byte> o) {
            ++second_produced;
            std::memset(o.data(), 0x22, o.size());
          },
          {}, &rebuilt);
      EXPECT_FALSE(rebuilt);
    });
  };
  WeightLayout::open_or_build(layout_dir, "k", specs, producer);
  second.join();
  EXPECT_TRUE(locked_while_building);
  EXPECT_EQ(second_produced.load(), 0) << "the second run wrote the layout too";
}

// EIO and a short read while a disk-homed weight is fetched for a decode step: an IoError naming
// the layout file, and the queue still works afterwards (no hang).
TEST(IoFaults, DiskWeightFetchDuringDecodeFailsCleanly) {
  TempDir dir;
  std::vector<TensorSpec> specs = {{"a", {256, 256}, DType::F32, 256 * 256 * 4},
                                   {"b", {256, 256}, DType::F32, 256 * 256 * 4}};
  auto producer = [](const TensorSpec&, uint64_t, std::span<std::byte> out) {
    std::memset(out.data(), 0x5a, out.size());
  };
  auto layout = WeightLayout::open_or_build(dir.path(), "k", specs, producer);
  HostTier host(4 << 20);
  TransferEngineOptions o;
  o.io.chunk_bytes = 64 << 10;
  TransferEngine engine(o);
  WeightStore store(*layout, engine, {nullptr, &host, nullptr}, {TierKind::Disk, TierKind::Disk},
                    false);
  void* dst = host.allocate(specs[1].bytes);
  const uint64_t b_offset = layout->record(1).offset;
  for (const auto& [hook, needle] :
       std::vector<std::pair<std::shared_ptr<IoFaultHook>, std::string>>{
           {std::make_shared<EioOnNth>(2), "Input/output error"},
           {std::make_shared<EndsAt>(b_offset + 100000), "unexpected end of file"}}) {
    engine.set_fault_hook(hook);
    try {
      store.fetch(1, Location::in_memory(host, dst), "decode").wait();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const IoError& e) {
      expect_message(e, {dir.path() + "/weights.bin", needle});
    }
    engine.set_fault_hook(nullptr);
    EXPECT_NO_THROW(store.fetch(1, Location::in_memory(host, dst), "decode").wait());
  }
  host.free(dst);
}

TEST(IoFaults, TemporaryFilesAreRemovedOnErrorPaths) {
  TempDir dir;
  try {
    DiskTier disk(dir.path(), 1 << 20);
    HostTier host(1 << 20);
    TransferEngine engine;
    engine.set_fault_hook(std::make_shared<EioOnNth>(0));
    void* buf = host.allocate(4096);
    const uint64_t off = disk.allocate(4096);
    engine.copy_sync(Location::in_memory(host, buf), Location::on_disk(disk, off), 4096,
                     {"decode", DataKind::Kv});
    ADD_FAILURE() << "no error";
  } catch (const IoError&) {
  }
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(IoFaults, BufferedFallbackWhenDirectIsRefusedWarnsOnce) {
  TempDir dir(std::filesystem::exists("/dev/shm") ? "/dev/shm" : "");
  DiskFile::reset_fallback_warnings_for_testing();
  DiskFile::simulate_direct_refusal_for_testing(true);
  ::testing::internal::CaptureStderr();
  {
    DiskTier a(dir.path(), 4 << 20);
    DiskTier b(dir.path(), 4 << 20);
    EXPECT_FALSE(a.file().is_direct());
    EXPECT_EQ(a.file().offset_align(), 1u);
    HostTier host(4 << 20);
    TransferEngine engine;
    const auto data = random_bytes(100000, 4);
    char* p = static_cast<char*>(host.allocate(100000));
    char* q = static_cast<char*>(host.allocate(100000));
    std::memcpy(p + 1, data.data(), 99999);
    const uint64_t off = a.allocate(200000);
    engine.copy_sync(Location::in_memory(host, p + 1), Location::on_disk(a, off + 3), 99999,
                     {"x", DataKind::Kv});
    engine.copy_sync(Location::on_disk(a, off + 3), Location::in_memory(host, q), 99999,
                     {"x", DataKind::Kv});
    EXPECT_EQ(std::memcmp(q, data.data(), 99999), 0);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  DiskFile::simulate_direct_refusal_for_testing(false);
  EXPECT_EQ(DiskFile::fallback_warnings(), 2);  // two refusals ...
  size_t warnings = 0;
  for (size_t pos = err.find("warning:"); pos != std::string::npos;
       pos = err.find("warning:", pos + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 1u) << err;  // ... one warning
  EXPECT_NE(err.find("O_DIRECT"), std::string::npos);
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(IoFaults, TmpfsRoundTripWorks) {
  if (!std::filesystem::exists("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  TempDir dir("/dev/shm");
  DiskTier disk(dir.path(), 8 << 20);
  HostTier host(8 << 20);
  TransferEngine engine;
  const size_t n = (2 << 20) + 77;
  const auto data = random_bytes(n, 8);
  char* p = static_cast<char*>(host.allocate(n));
  std::memcpy(p, data.data(), n);
  const uint64_t off = disk.allocate(n + 100);
  engine.copy_sync(Location::in_memory(host, p), Location::on_disk(disk, off + 13), n,
                   {"x", DataKind::Kv});
  std::memset(p, 0, n);
  engine.copy_sync(Location::on_disk(disk, off + 13), Location::in_memory(host, p), n,
                   {"x", DataKind::Kv});
  EXPECT_EQ(std::memcmp(p, data.data(), n), 0);
}

}  // namespace
}  // namespace h2oflex
