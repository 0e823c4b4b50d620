#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "offload/io/aligned_buffer.h"
#include "offload/tiers/disk_tier.h"
#include "offload/tiers/memory_tier.h"
#include "runtime/core/anonymous_memory.h"
#include "tests/offload/test_support.h"

namespace h2oflex {
namespace {

using testing_support::TempDir;

void expect_budget_error(const std::function<void()>& f, const std::string& tier,
                         const std::string& request, const std::string& budget) {
  try {
    f();
    ADD_FAILURE() << "no budget error";
  } catch (const TierBudgetError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tier '" + tier + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(request), std::string::npos) << msg;
    EXPECT_NE(msg.find(budget), std::string::npos) << msg;
    EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
  }
}

TEST(Tiers, NamesRoundTrip) {
  for (TierKind k : {TierKind::Device, TierKind::Host, TierKind::Disk}) {
    EXPECT_EQ(parse_tier_kind(tier_kind_name(k)), k);
  }
  EXPECT_EQ(tier_kind_name(TierKind::Device), "device");
  EXPECT_THROW(parse_tier_kind("gpu0"), InputError);
}

TEST(Tiers, DeviceArenaBudgetUsageAndPeak) {
  CpuDeviceTier device(1 << 20);
  EXPECT_EQ(device.name(), "device");
  EXPECT_TRUE(device.is_host_addressable());
  void* a = device.allocate(100000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % device.alignment(), 0u);
  std::memset(a, 1, 100000);
  EXPECT_EQ(device.used(), device.round_up(100000));
  void* b = device.allocate(500000);
  const uint64_t both = device.used();
  device.free(a);
  EXPECT_EQ(device.used(), device.round_up(500000));
  EXPECT_EQ(device.peak(), both);
  expect_budget_error([&] { device.allocate(600000, "kv cache"); }, "device", "602112 bytes",
                      "1048576 bytes");
  EXPECT_EQ(device.used(), device.round_up(500000));  // a refused allocation charges nothing
  device.free(b);
  EXPECT_EQ(device.used(), 0u);
}

TEST(Tiers, HostTierIsPageAlignedMmapAndAnnouncesPinnedBuffers) {
  struct Recorder : PinListener {
    std::vector<std::pair<void*, size_t>> pinned;
    int unpinned = 0;
    void register_pinned(void* p, size_t n) override { pinned.emplace_back(p, n); }
    void unregister_pinned(void*, size_t) noexcept override { ++unpinned; }
  } recorder;
  HostTier host(8 << 20);
  void* early = host.allocate_pinned(4096);
  host.add_pin_listener(&recorder);
  ASSERT_EQ(recorder.pinned.size(), 1u);  // existing pinned buffers are announced
  void* plain = host.allocate(10);
  EXPECT_EQ(recorder.pinned.size(), 1u);  // plain allocations are not
  void* staging = host.allocate_pinned(1 << 20);
  ASSERT_EQ(recorder.pinned.size(), 2u);
  EXPECT_EQ(recorder.pinned[1].first, staging);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(plain) % 4096, 0u);
  host.free(staging);
  EXPECT_EQ(recorder.unpinned, 1);
  expect_budget_error([&] { host.allocate(9 << 20); }, "host", "9437184 bytes", "8388608 bytes");
  host.remove_pin_listener(&recorder);
  host.free(early);
  host.free(plain);
  EXPECT_EQ(host.used(), 0u);
  EXPECT_EQ(host.peak(), 4096u + 4096u + (1 << 20));
}

// A pin that fails (cudaHostRegister refusing the range) leaves nothing behind: no charge on the
// tier, no mapping, and the listeners that had pinned it are told to unpin it.
TEST(Tiers, FailedPinReleasesTheChargeAndTheMapping) {
  struct Recorder : PinListener {
    int pinned = 0, unpinned = 0;
    void register_pinned(void*, size_t) override { ++pinned; }
    void unregister_pinned(void*, size_t) noexcept override { ++unpinned; }
  } first;
  struct Refuser : PinListener {
    void register_pinned(void*, size_t) override { throw std::runtime_error("pin refused"); }
    void unregister_pinned(void*, size_t) noexcept override { ADD_FAILURE() << "never pinned"; }
  } refuser;
  HostTier host(8 << 20);
  host.add_pin_listener(&first);
  host.add_pin_listener(&refuser);
  EXPECT_THROW(host.allocate_pinned(1 << 20, "staging"), std::runtime_error);
  EXPECT_EQ(host.used(), 0u);
  EXPECT_EQ(first.pinned, 1);
  EXPECT_EQ(first.unpinned, 1);
  host.remove_pin_listener(&refuser);
  host.remove_pin_listener(&first);
  EXPECT_EQ(first.unpinned, 1);      // the failed buffer is no longer among the pinned ones
  void* p = host.allocate(8 << 20);  // the whole budget is free again
  host.free(p);
}

// Memory about to be pinned is faulted in on every core first; its contents stay as they were.
TEST(Tiers, FaultInParallelMakesEveryPageResidentAndKeepsTheData) {
  const size_t bytes = (size_t{130} << 20) + 12345;  // three 64 MiB pieces, the last partial
  auto* p = static_cast<unsigned char*>(map_anonymous(bytes));
  ASSERT_NE(p, nullptr);
  p[0] = 7;
  p[bytes - 1] = 9;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = (bytes + page - 1) / page;
  std::vector<unsigned char> resident(pages);
  auto count_resident = [&] {
    EXPECT_EQ(mincore(p, bytes, resident.data()), 0);
    size_t n = 0;
    for (unsigned char r : resident) n += r & 1;
    return n;
  };
  EXPECT_LT(count_resident(), pages);
  ASSERT_TRUE(fault_in_parallel(p, bytes)) << "no MADV_POPULATE_WRITE on this kernel";
  EXPECT_EQ(count_resident(), pages);
  EXPECT_EQ(p[0], 7);
  EXPECT_EQ(p[bytes - 1], 9);
  EXPECT_EQ(p[bytes / 2], 0);
  unmap_anonymous(p, bytes);
}

// The VmFlags of the mapping that holds `p` (/proc/self/smaps): "hg" marks MADV_HUGEPAGE.
std::string vm_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find('-') < 16) {
      inside = at >= begin && at < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool advised_huge(const void* p) {
  const std::string flags = vm_flags(p);
  return flags.find(" hg") != std::string::npos;
}

// Buffers of 2 MiB and more (host tier, the CPU arena, bounce buffers) start on a 2 MiB
// boundary and are advised as huge pages; smaller ones are plain pages. Memory comes zeroed.
TEST(Tiers, LargeBuffersAreHugePageAlignedAndAdvised) {
  HostTier host(64 << 20);
  CpuDeviceTier device(64 << 20);
  char* h = static_cast<char*>(host.allocate((6 << 20) + 123));
  char* d = static_cast<char*>(device.allocate(4 << 20));
  AlignedBuffer bounce(3 << 20);
  char* small = static_cast<char*>(host.allocate(64 << 10));
  for (char* p : {h, d, bounce.data()}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
    EXPECT_TRUE(advised_huge(p)) << vm_flags(p);
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[(2 << 20) + 5], 0);
  }
  EXPECT_FALSE(vm_flags(small).empty());
  EXPECT_FALSE(advised_huge(small)) << vm_flags(small);
  h[(6 << 20) + 122] = 1;  // the whole size is usable
  host.free(h);
  host.free(small);
  device.free(d);
  EXPECT_EQ(host.used() + device.used(), 0u);
}

TEST(Tiers, DiskTierAllocatesAlignedRangesReusesFreedOnesAndLeavesNoFile) {
  TempDir dir;
  {
    DiskTier disk(dir.path(), 1 << 20);
    EXPECT_EQ(dir.entries(), 0u);  // the backing file is unlinked once open
    EXPECT_FALSE(disk.is_host_addressable());
    EXPECT_GE(disk.alignment(), 4096u);
    const uint64_t a = disk.allocate(10);
    const uint64_t b = disk.allocate(5000);
    const uint64_t c = disk.allocate(4096);
    for (uint64_t off : {a, b, c}) EXPECT_EQ(off % disk.alignment(), 0u);
    EXPECT_NE(a, b);
    EXPECT_GE(b, a + 10);
    EXPECT_GE(c, b + 5000);
    EXPECT_EQ(disk.used(), 4096u + 8192u + 4096u);
    disk.free(b);
    EXPECT_EQ(disk.allocate(8000), b);  // first fit reuses the hole
    expect_budget_error([&] { disk.allocate(2 << 20); }, "disk", "2097152 bytes", "1048576 bytes");
    disk.free(a);
    disk.free(b);
    disk.free(c);
    EXPECT_EQ(disk.used(), 0u);
    EXPECT_EQ(disk.file().size(), 0u);  // freed tail returned to the file system
  }
  EXPECT_EQ(dir.entries(), 0u);
}

}  // namespace
}  // namespace h2oflex
