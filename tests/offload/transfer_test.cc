#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "offload/transfer/transfer_engine.h"
#include "runtime/core/timer.h"
#include "tests/offload/test_support.h"

namespace h2oflex {
namespace {

using testing_support::pread_buffered;
using testing_support::pwrite_buffered;
using testing_support::random_bytes;
using testing_support::TempDir;

// Owns a region of `bytes` in one tier and gives independent (non-engine) access to its bytes.
class Region {
 public:
  Region(TierKind kind, CpuDeviceTier& device, HostTier& host, DiskTier& disk, uint64_t bytes)
      : kind_(kind), device_(device), host_(host), disk_(disk), bytes_(bytes) {
    if (kind == TierKind::Device) {
      ptr_ = device.allocate(bytes);
    } else if (kind == TierKind::Host) {
      ptr_ = host.allocate_pinned(bytes);
    } else {
      offset_ = disk.allocate(bytes);
    }
  }
  ~Region() {
    if (kind_ == TierKind::Device) device_.free(ptr_);
    if (kind_ == TierKind::Host) host_.free(ptr_);
    if (kind_ == TierKind::Disk) disk_.free(offset_);
  }
  Location at(uint64_t off) const {
    if (kind_ == TierKind::Disk) return Location::on_disk(disk_, offset_ + off);
    MemoryTier& t = kind_ == TierKind::Device ? static_cast<MemoryTier&>(device_) : host_;
    return Location::in_memory(t, static_cast<char*>(ptr_) + off);
  }
  void fill(const std::vector<unsigned char>& data) {
    if (kind_ == TierKind::Disk) {
      pwrite_buffered(disk_.file().fd(), offset_, data.data(), data.size());
    } else {
      std::memcpy(ptr_, data.data(), data.size());
    }
  }
  std::vector<unsigned char> contents() const {
    if (kind_ == TierKind::Disk) return pread_buffered(disk_.file().fd(), offset_, bytes_);
    const auto* p = static_cast<const unsigned char*>(ptr_);
    return {p, p + bytes_};
  }

 private:
  TierKind kind_;
  CpuDeviceTier& device_;
  HostTier& host_;
  DiskTier& disk_;
  uint64_t bytes_;
  void* ptr_ = nullptr;
  uint64_t offset_ = 0;
};

// Cache loads hold few bytes in flight, so a store queued behind them waits little; the store
// queue carries the real-time class; every queue keeps the configured depth.
TEST(TransferEngine, CacheLoadsHoldFewBytesInFlightSoStoresWaitLittle) {
  TransferEngineOptions o;
  o.io.chunk_bytes = 1 << 20;
  o.io.queue_depth = 32;
  TransferEngine engine(o);
  const IoEngineOptions& load = engine.io_options(QueueId::CacheLoad);
  EXPECT_EQ(load.max_in_flight_bytes, kCacheLoadInFlightBytes);
  EXPECT_EQ(load.queue_depth, 32u);
  for (QueueId q : {QueueId::WeightLoad, QueueId::CacheStore, QueueId::Activation}) {
    EXPECT_EQ(engine.io_options(q).queue_depth, 32u);
    EXPECT_EQ(engine.io_options(q).max_in_flight_bytes, 0u);
  }
  EXPECT_EQ(engine.io_options(QueueId::CacheStore).ioprio_class, kIoprioClassRealTime);
  EXPECT_EQ(engine.io_options(QueueId::CacheLoad).ioprio_class, 0);
}

// A copy queued `after` another queue's copy starts only once that one is done, and without the
// caller waiting: the KV load queued ahead of compute behind the store that empties its buffer.
// A copy queued behind it on its queue waits too. A failed prerequisite fails the copy with its
// error, and the copy never runs.
TEST(TransferEngine, CopyAfterWaitsForItsPrerequisitesOnTheQueue) {
  HostTier host(16 << 20);
  TransferEngine engine;
  const size_t n = 1 << 16;
  const auto data = random_bytes(n, 3);
  char* a = static_cast<char*>(host.allocate(n));
  char* b = static_cast<char*>(host.allocate(n));
  char* c = static_cast<char*>(host.allocate(n));
  std::memcpy(a, data.data(), n);
  std::memset(b, 0, n);
  std::memset(c, 0, n);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  // The store a -> b is held back inside its `then`; the load b -> c must wait for it.
  const TransferHandle store =
      engine.copy(QueueId::CacheStore, Location::in_memory(host, a), Location::in_memory(host, b),
                  n, {"decode", DataKind::Kv}, [released] { released.wait(); });
  const TransferHandle load =
      engine.copy(QueueId::CacheLoad, Location::in_memory(host, b), Location::in_memory(host, c), n,
                  {"decode", DataKind::Kv}, {}, {store});
  // Loads start in queue order (the queue has two workers): the one behind waits too.
  char* d = static_cast<char*>(host.allocate(n));
  const TransferHandle behind =
      engine.copy(QueueId::CacheLoad, Location::in_memory(host, a), Location::in_memory(host, d), n,
                  {"decode", DataKind::Kv});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(load.done()) << "the load ran before the store it depends on finished";
  EXPECT_FALSE(behind.done()) << "a cache load started before the one queued ahead of it";
  release.set_value();
  load.wait();
  behind.wait();
  EXPECT_EQ(std::memcmp(c, data.data(), n), 0) << "the load read the buffer before the store";
  EXPECT_EQ(std::memcmp(d, data.data(), n), 0);
  host.free(d);

  const TransferHandle failed =
      engine.copy(QueueId::CacheStore, Location::in_memory(host, a), Location::in_memory(host, b),
                  n, {"decode", DataKind::Kv}, [] { throw IoError("planted store failure"); });
  std::memset(c, 0, n);
  const TransferHandle blocked =
      engine.copy(QueueId::CacheLoad, Location::in_memory(host, b), Location::in_memory(host, c), n,
                  {"decode", DataKind::Kv}, {}, {failed});
  try {
    blocked.wait();
    FAIL() << "a copy after a failed one succeeded";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("planted store failure"), std::string::npos) << e.what();
  }
  EXPECT_NE(std::memcmp(c, data.data(), n), 0) << "the copy after a failed prerequisite ran";
  for (char* p : {a, b, c}) host.free(p);
}

class TransferRoundTrip : public ::testing::TestWithParam<std::tuple<TierKind, TierKind>> {};

TEST_P(TransferRoundTrip, EveryPairAlignedAndUnalignedSmallAndMultiChunk) {
  const auto [src_kind, dst_kind] = GetParam();
  TempDir dir;
  CpuDeviceTier device(64 << 20);
  HostTier host(64 << 20);
  DiskTier disk(dir.path(), 64 << 20);
  TransferEngineOptions options;
  options.io.chunk_bytes = 64 << 10;  // several chunks in flight even for small files
  options.io.queue_depth = 8;
  options.bounce_bytes = 256 << 10;  // staged copies take several pieces
  TransferEngine engine(options);
  engine.use_pinned_memory(host);

  struct Case {
    uint64_t bytes, src_off, dst_off;
  };
  const Case cases[] = {{1, 0, 0},
                        {4095, 0, 0},
                        {4096, 0, 0},
                        {4096, 1, 4095},
                        {100, 4000, 9000},
                        {(3 << 20), 0, 0},
                        {(1 << 20) + 123, 4096, 17},
                        {(1 << 20) + 123, 5, 5},
                        {(2 << 20) - 7, 8191, 3}};
  uint64_t seed = 1;
  uint64_t total = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "bytes " << c.bytes << " src_off " << c.src_off << " dst_off " << c.dst_off);
    const uint64_t region = c.bytes + 2 * 8192 + 16;
    Region src(src_kind, device, host, disk, region);
    Region dst(dst_kind, device, host, disk, region);
    const auto src_data = random_bytes(region, seed++);
    const auto dst_data = random_bytes(region, seed++);
    src.fill(src_data);
    dst.fill(dst_data);
    TransferHandle h = engine.copy(QueueId::CacheStore, src.at(c.src_off), dst.at(c.dst_off),
                                   c.bytes, {"decode", DataKind::Kv});
    engine.wait(h);
    EXPECT_TRUE(h.done());
    // Expected: the destination's old bytes, with the copied range replaced.
    auto expected = dst_data;
    std::memcpy(expected.data() + c.dst_off, src_data.data() + c.src_off, c.bytes);
    const auto got = dst.contents();
    ASSERT_EQ(got.size(), expected.size());
    ASSERT_TRUE(got == expected);
    total += c.bytes;
  }
  EXPECT_EQ(engine.bytes_moved("decode", DataKind::Kv, src_kind, dst_kind), total);
  EXPECT_GT(engine.busy_seconds(QueueId::CacheStore), 0.0);
  EXPECT_EQ(engine.busy_seconds(QueueId::WeightLoad), 0.0);
  EXPECT_EQ(device.used(), 0u);
  EXPECT_EQ(disk.used(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    AllTierPairs, TransferRoundTrip,
    ::testing::Combine(::testing::Values(TierKind::Device, TierKind::Host, TierKind::Disk),
                       ::testing::Values(TierKind::Device, TierKind::Host, TierKind::Disk)),
    [](const auto& info) {
      return std::string(tier_kind_name(std::get<0>(info.param))) + "_to_" +
             std::string(tier_kind_name(std::get<1>(info.param)));
    });

TEST(TransferEngine, QueuesRunConcurrentlyAndCountersAreKeyed) {
  TempDir dir;
  HostTier host(64 << 20);
  DiskTier disk(dir.path(), 64 << 20);
  TransferEngine engine;
  engine.use_pinned_memory(host);
  const size_t n = 4 << 20;
  char* a = static_cast<char*>(host.allocate_pinned(n));
  char* b = static_cast<char*>(host.allocate(n));
  const auto data = random_bytes(n, 9);
  std::memcpy(a, data.data(), n);
  const uint64_t off = disk.allocate(n);
  std::vector<TransferHandle> handles;
  handles.push_back(engine.copy(QueueId::CacheStore, Location::in_memory(host, a),
                                Location::on_disk(disk, off), n, {"prefill", DataKind::Kv}));
  handles.push_back(engine.copy(QueueId::Activation, Location::in_memory(host, a),
                                Location::in_memory(host, b), n,
                                {"prefill", DataKind::Activation}));
  for (auto& h : handles) engine.wait(h);
  engine.copy_sync(Location::on_disk(disk, off), Location::in_memory(host, b), n,
                   {"decode", DataKind::Kv});
  EXPECT_EQ(std::memcmp(b, data.data(), n), 0);
  engine.drain_all();
  const auto records = engine.counters();
  ASSERT_EQ(records.size(), 3u);
  uint64_t sum = 0;
  for (const auto& r : records) sum += r.bytes;
  EXPECT_EQ(sum, 3 * n);
  EXPECT_EQ(engine.bytes_moved("prefill", DataKind::Kv, TierKind::Host, TierKind::Disk), n);
  EXPECT_EQ(engine.bytes_moved("decode", DataKind::Kv, TierKind::Disk, TierKind::Host), n);
  EXPECT_EQ(engine.bytes_moved("decode", DataKind::Kv, TierKind::Host, TierKind::Disk), 0u);
  engine.reset_counters();
  EXPECT_TRUE(engine.counters().empty());
  host.free(a);
  host.free(b);
  disk.free(off);
}

TEST(TransferEngine, ManyQueuedCopiesCompleteInOrderPerQueue) {
  HostTier host(16 << 20);
  TransferEngine engine;
  char* buf = static_cast<char*>(host.allocate(1 << 20));
  std::vector<int> order;
  std::mutex m;
  std::vector<TransferHandle> handles;
  for (int i = 0; i < 50; ++i) {
    handles.push_back(engine.copy(QueueId::WeightLoad, Location::in_memory(host, buf),
                                  Location::in_memory(host, buf + 4096), 1000,
                                  {"load", DataKind::Weight}, [&, i] {
                                    std::lock_guard lock(m);
                                    order.push_back(i);
                                  }));
  }
  engine.drain(QueueId::WeightLoad);
  for (auto& h : handles) EXPECT_TRUE(h.done());
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
  host.free(buf);
}

// Device memory that only copies reach, counting the copies out (each one would wait for a GPU
// stream).
class CopyCountingDevice final : public MemoryTier {
 public:
  CopyCountingDevice() : MemoryTier(TierKind::Device, "device", 64 << 20, 4096) {}
  bool is_host_addressable() const override { return false; }
  void* allocate(size_t bytes, std::string_view) override {
    charge(round_up(bytes));
    return std::aligned_alloc(4096, round_up(bytes));
  }
  void free(void* p) override { std::free(p); }
  void copy_from_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n) override {
    ++copies_out;
    bytes_out += n;
    std::memcpy(dst, src, n);
  }
  // Packs the pieces in one copy out, as a GPU tier's gather kernel does.
  void gather_to_host(void* dst, const void* src, const ByteRanges& ranges) override {
    ++copies_out;
    char* out = static_cast<char*>(dst);
    for (const auto& [off, len] : ranges) {
      std::memcpy(out, static_cast<const char*>(src) + off, len);
      out += len;
      bytes_out += len;
    }
  }
  int copies_out = 0;
  uint64_t bytes_out = 0;
};

// KV write-back from a GPU workspace: hundreds of small records, gaps between them, one
// unaligned and one larger than the staging buffer. Every byte lands, nothing else changes,
// and the records leave the device gathered, a few copies for all of them, without the gaps.
TEST(TransferEngine, ScatteredRangesFromDeviceMemoryAreGatheredTogether) {
  TempDir dir;
  HostTier host(64 << 20);
  DiskTier disk(dir.path(), 64 << 20);
  CopyCountingDevice device;
  TransferEngineOptions options;
  options.bounce_bytes = 64 << 10;  // 32 KiB staging: several spans
  TransferEngine engine(options);
  const size_t n = 1 << 20;
  const auto data = random_bytes(n, 17);
  void* src = device.allocate(n, "src");
  std::memcpy(src, data.data(), n);
  TransferEngine::Ranges ranges;
  for (uint64_t off = 4096; off + 512 <= 600 * 1024; off += 1536) ranges.emplace_back(off, 512);
  ranges.emplace_back(600 * 1024 + 7, 100);        // unaligned
  ranges.emplace_back(640 * 1024, 40 * 1024);      // larger than the staging half
  ranges.emplace_back(700 * 1024 + 512, 3 * 512);  // after it
  const size_t records = ranges.size();
  uint64_t record_bytes = 0;
  for (const auto& r : ranges) record_bytes += r.second;
  char* host_dst = static_cast<char*>(host.allocate(n));
  std::memset(host_dst, 0, n);
  const uint64_t disk_dst = disk.allocate(n);
  const std::vector<unsigned char> zeros(n, 0);
  pwrite_buffered(disk.file().fd(), disk_dst, zeros.data(), n);
  engine
      .copy_ranges(QueueId::CacheStore, Location::in_memory(device, src),
                   Location::in_memory(host, host_dst), ranges, {"decode", DataKind::Kv})
      .wait();
  const int host_copies = device.copies_out;
  EXPECT_EQ(device.bytes_out, record_bytes) << "only the records cross, not the gaps";
  engine
      .copy_ranges(QueueId::CacheStore, Location::in_memory(device, src),
                   Location::on_disk(disk, disk_dst), ranges, {"decode", DataKind::Kv})
      .wait();
  const auto on_disk = pread_buffered(disk.file().fd(), disk_dst, n);
  std::vector<unsigned char> want(n, 0);
  for (const auto& [off, len] : ranges) std::memcpy(want.data() + off, data.data() + off, len);
  EXPECT_EQ(0, std::memcmp(host_dst, want.data(), n));
  EXPECT_TRUE(on_disk == want);
  EXPECT_LT(host_copies, static_cast<int>(records) / 8) << records << " records";
  EXPECT_LT(device.copies_out - host_copies, static_cast<int>(records) / 8) << "to disk";
  EXPECT_EQ(engine.bytes_moved("decode", DataKind::Kv, TierKind::Device, TierKind::Disk),
            engine.bytes_moved("decode", DataKind::Kv, TierKind::Device, TierKind::Host));
  host.free(host_dst);
  device.free(src);
  disk.free(disk_dst);
}

// Span copies between memory (host, and a device only copies reach) and disk, both ways: aligned
// spans that direct I/O moves in place, runs of small records contiguous on the disk (a KV log's
// entries), one unaligned, one larger than the staging area, one empty, and spans that overlap in
// the destination, where the later must win (read back: a staged record over a direct span, and
// a direct span over staged records). The oracle applies the spans one by one.
TEST(TransferEngine, SpanCopiesLandInOrderBetweenMemoryAndDisk) {
  TempDir dir;
  HostTier host(64 << 20);
  DiskTier disk(dir.path(), 64 << 20);
  CopyCountingDevice device;
  TransferEngineOptions options;
  options.bounce_bytes = 64 << 10;  // 32 KiB staging
  TransferEngine engine(options);
  const size_t n = 1 << 20;
  ByteSpans spans;
  for (uint64_t i = 0; i < 8; ++i) spans.push_back({i * 8192, 4096 * (i + 1) + 65536, 4096});
  for (uint64_t i = 0; i < 200; ++i) spans.push_back({300000 + i * 256 * 3, 500000 + i * 256, 256});
  // Read back, an aligned span right after the run that lands on records of its last part: it
  // must win.
  spans.push_back({397312, 950272, 4096});
  spans.push_back({7, 600001, 1000});            // unaligned
  spans.push_back({0, 700000, 100 * 1024});      // larger than the staging half
  spans.push_back({5000, 0, 0});                 // empty
  spans.push_back({900000, 500000 + 512, 256});  // overwrites a record of the run above
  for (const bool device_memory : {false, true}) {
    MemoryTier& mem = device_memory ? static_cast<MemoryTier&>(device) : host;
    const auto data = random_bytes(n, 23);
    const std::vector<unsigned char> zeros(n, 0);
    char* src = static_cast<char*>(mem.allocate(n, "src"));
    std::memcpy(src, data.data(), n);
    // Memory -> disk: the spans' destinations are offsets on the disk.
    const uint64_t on_disk = disk.allocate(n);
    pwrite_buffered(disk.file().fd(), on_disk, zeros.data(), n);
    engine
        .copy_spans(QueueId::CacheStore, Location::in_memory(mem, src),
                    Location::on_disk(disk, on_disk), spans, {"decode", DataKind::Kv})
        .wait();
    std::vector<unsigned char> want(n, 0);
    for (const ByteSpan& sp : spans)
      std::memcpy(want.data() + sp.dst, data.data() + sp.src, sp.length);
    EXPECT_TRUE(pread_buffered(disk.file().fd(), on_disk, n) == want) << device_memory;
    // Disk -> memory: the same spans reversed (sources on the disk).
    ByteSpans back;
    for (const ByteSpan& sp : spans) back.push_back({sp.dst, sp.src, sp.length});
    pwrite_buffered(disk.file().fd(), on_disk, data.data(), n);
    std::memset(src, 0, n);
    engine
        .copy_spans(QueueId::CacheLoad, Location::on_disk(disk, on_disk),
                    Location::in_memory(mem, src), back, {"decode", DataKind::Kv})
        .wait();
    std::vector<unsigned char> got(n, 0);
    for (const ByteSpan& sp : back)
      std::memcpy(got.data() + sp.dst, data.data() + sp.src, sp.length);
    EXPECT_EQ(0, std::memcmp(src, got.data(), n)) << device_memory;
    mem.free(src);
    disk.free(on_disk);
  }
  EXPECT_EQ(engine.bytes_moved("decode", DataKind::Kv, TierKind::Host, TierKind::Disk),
            total_length(spans));
  EXPECT_EQ(engine.bytes_moved("decode", DataKind::Kv, TierKind::Disk, TierKind::Device),
            total_length(spans));
}

// A KV load's spans: the cache's base (aligned, straight into memory) and then its log, 256-byte
// records contiguous on the disk that land over slots of the base. All of it is one submission,
// so the device is not left idle between the base and the log; the records still win over the
// base. A log that ends where the file ends cannot be read as a whole-block window: it is read on
// its own, with the same bytes.
TEST(TransferEngine, ALoadReadsTheBaseAndItsLogInOneSubmission) {
  TempDir dir;
  HostTier host(16 << 20);
  DiskTier disk(dir.path(), 16 << 20);
  TransferEngine engine;
  const size_t region = 1 << 20;              // K at 0, V at `region`, the log at 2 x region
  const size_t log_records = 301, rec = 256;  // 77056 bytes: not whole blocks
  const size_t n = 2 * region + log_records * rec;
  const auto data = random_bytes(n, 41);
  const uint64_t on_disk = disk.allocate(n);
  pwrite_buffered(disk.file().fd(), on_disk, data.data(), n);
  ByteSpans spans{{0, 0, 512 << 10}, {region, region, 512 << 10}};
  for (uint64_t i = 0; i < log_records; ++i) {
    const uint64_t slot = (i * 7919) % (2 * (512 << 10) / rec);  // somewhere in the base
    spans.push_back({2 * region + i * rec, (slot % 2) * region + (slot / 2) * rec, rec});
  }
  std::vector<unsigned char> want(2 * region, 0);
  for (const ByteSpan& sp : spans)
    std::memcpy(want.data() + sp.dst, data.data() + sp.src, sp.length);
  for (const bool log_ends_the_file : {false, true}) {
    if (log_ends_the_file) disk.file().truncate(on_disk + n);  // n is not a whole block
    char* mem = static_cast<char*>(host.allocate_pinned(2 * region));
    std::memset(mem, 0, 2 * region);
    const uint64_t before = engine.io_submissions(QueueId::CacheLoad);
    engine
        .copy_spans(QueueId::CacheLoad, Location::on_disk(disk, on_disk),
                    Location::in_memory(host, mem), spans, {"decode", DataKind::Kv})
        .wait();
    EXPECT_EQ(0, std::memcmp(mem, want.data(), 2 * region)) << log_ends_the_file;
    const uint64_t submissions = engine.io_submissions(QueueId::CacheLoad) - before;
    if (log_ends_the_file) {
      EXPECT_GT(submissions, 1u);
    } else {
      EXPECT_EQ(submissions, 1u);
    }
    host.free(mem);
  }
}

// Holds load A's first completion until a request of load B has completed (at most 5 s).
struct HoldAUntilB : IoFaultHook {
  HoldAUntilB(uint64_t a, uint64_t b, uint64_t n) : a(a), b(b), n(n) {}
  int on_complete(const IoRequestInfo& r, int res) override {
    std::unique_lock lock(mutex);
    if (r.offset >= b && r.offset < b + n) {
      b_completed = true;
      cv.notify_all();
    } else if (r.offset >= a && r.offset < a + n && !a_held) {
      a_held = true;
      overlapped = cv.wait_for(lock, std::chrono::seconds(5), [&] { return b_completed; });
    }
    return res;
  }
  const uint64_t a, b, n;
  std::mutex mutex;
  std::condition_variable cv;
  bool a_held = false, b_completed = false, overlapped = false;
};

// A cache load's requests go to the device as soon as the load before it has submitted all of
// its own, while that one's are still read: the device does not drain between two loads. Both
// land their bytes, and the queue's busy time counts the overlap once. (With one worker, B waits
// for A, whose completion the hook holds back until B's.)
TEST(TransferEngine, ACacheLoadStartsWhileTheOneBeforeDrains) {
  TempDir dir;
  HostTier host(32 << 20);
  DiskTier disk(dir.path(), 32 << 20);
  TransferEngine engine;
  const size_t n = 4 << 20;  // under kCacheLoadInFlightBytes: all of A is submitted at once
  const auto data = random_bytes(2 * n, 43);
  const uint64_t at = disk.allocate(2 * n);
  pwrite_buffered(disk.file().fd(), at, data.data(), 2 * n);
  auto hook = std::make_shared<HoldAUntilB>(at, at + n, n);
  engine.set_fault_hook(hook);
  char* a = static_cast<char*>(host.allocate_pinned(n));
  char* b = static_cast<char*>(host.allocate_pinned(n));
  const Stopwatch wall;
  const TransferHandle ha =
      engine.copy_spans(QueueId::CacheLoad, Location::on_disk(disk, at),
                        Location::in_memory(host, a), {{0, 0, n}}, {"decode", DataKind::Kv});
  const TransferHandle hb =
      engine.copy_spans(QueueId::CacheLoad, Location::on_disk(disk, at + n),
                        Location::in_memory(host, b), {{0, 0, n}}, {"decode", DataKind::Kv});
  ha.wait();
  hb.wait();
  engine.drain(QueueId::CacheLoad);  // the busy time is added after the handles are done
  const double elapsed = wall.elapsed();
  EXPECT_TRUE(hook->overlapped) << "load B started only after load A had finished";
  EXPECT_EQ(std::memcmp(a, data.data(), n), 0);
  EXPECT_EQ(std::memcmp(b, data.data() + n, n), 0);
  EXPECT_LE(engine.busy_seconds(QueueId::CacheLoad), elapsed);
  host.free(a);
  host.free(b);
}

}  // namespace
}  // namespace h2oflex
