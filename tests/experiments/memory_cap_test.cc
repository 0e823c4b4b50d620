// Suite rows with `memory_cap`: where the memory cgroup goes (cgroup v1 memory hierarchy or the
// v2 root, from /proc/self/cgroup and /proc/self/mountinfo texts), and the key's checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiments/suite/experiment_runner.h"
#include "experiments/suite/experiment_suite.h"
#include "experiments/suite/memory_cap.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

// A container with the memory controller on a cgroup v1 hierarchy and a cgroup2 mount beside it
// (systemd's "hybrid" layout).
constexpr const char* kHybridCgroup =
    "9:name=systemd:/\n4:memory:/jobs/abc\n3:cpuset:/\n1:cpu:/\n0::/\n";
constexpr const char* kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(MemoryCapPlace, CgroupV1MemoryHierarchyGetsAChildOfThisProcesssGroup) {
  std::string why;
  const auto place = find_memory_cgroup_place(kHybridCgroup, kHybridMounts, &why);
  ASSERT_TRUE(place) << why;
  EXPECT_FALSE(place->v2);
  EXPECT_EQ(place->parent, "/sys/fs/cgroup/memory/jobs/abc");
  EXPECT_EQ(place->self_procs, "/sys/fs/cgroup/memory/jobs/abc/cgroup.procs");
}

TEST(MemoryCapPlace, CgroupV1MountOfASubtreeStripsItsRoot) {
  // A container whose memory hierarchy is mounted from /jobs: the group path is under it.
  std::string why;
  const auto place = find_memory_cgroup_place(
      "4:memory:/jobs/abc\n",
      "35 31 0:32 /jobs /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", &why);
  ASSERT_TRUE(place) << why;
  EXPECT_EQ(place->parent, "/sys/fs/cgroup/memory/abc");
}

TEST(MemoryCapPlace, UnifiedCgroupV2UsesTheMountRoot) {
  std::string why;
  const auto place =
      find_memory_cgroup_place("0::/user.slice/session-1.scope\n",
                               "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 "
                               "rw,nsdelegate\n",
                               &why);
  ASSERT_TRUE(place) << why;
  EXPECT_TRUE(place->v2);
  EXPECT_EQ(place->parent, "/sys/fs/cgroup");
  EXPECT_EQ(place->self_procs, "/sys/fs/cgroup/user.slice/session-1.scope/cgroup.procs");
}

TEST(MemoryCapPlace, NoneSaysWhy) {
  std::string why;
  EXPECT_FALSE(find_memory_cgroup_place("", kHybridMounts, &why));
  EXPECT_NE(why.find("no memory cgroup hierarchy"), std::string::npos) << why;
  why.clear();
  EXPECT_FALSE(find_memory_cgroup_place("4:memory:/jobs/abc\n",
                                        "41 31 0:38 / /u rw - cgroup2 cgroup2 rw\n", &why));
  EXPECT_NE(why.find("not mounted"), std::string::npos) << why;
  why.clear();
  EXPECT_FALSE(find_memory_cgroup_place("0::/\n", "31 23 0:28 / /x rw - tmpfs tmpfs rw\n", &why));
  EXPECT_NE(why.find("no cgroup2"), std::string::npos) << why;
}

struct SuiteFile {
  fs::path path =
      fs::temp_directory_path() / ("h2oflex_cap_" + std::to_string(::getpid()) + ".yaml");
  ~SuiteFile() { fs::remove(path); }
  Suite load(const std::string& text) {
    std::ofstream(path) << text;
    return load_suite(path.string());
  }
};

constexpr const char* kRowConfig = "config: {model: opt-125m, prompt_len: 8, gen_len: 2}";

TEST(MemoryCapKey, RowsAndDefaultsCarryIt) {
  SuiteFile f;
  const Suite s = f.load(std::string("suite: s\ndefaults: {predict: false, memory_cap: 1.5GiB}\n") +
                         "rows:\n  - {label: a, " + kRowConfig +
                         "}\n  - {label: b, memory_cap: 512MiB, " + kRowConfig + "}\n");
  ASSERT_TRUE(s.rows[0].memory_cap);
  EXPECT_EQ(*s.rows[0].memory_cap, 1536ull << 20);
  ASSERT_TRUE(s.rows[1].memory_cap);
  EXPECT_EQ(*s.rows[1].memory_cap, 512ull << 20);
}

TEST(MemoryCapKey, BadValuesNameTheKey) {
  SuiteFile f;
  for (const std::string& value : {"lots", "1MiB"}) {
    try {
      f.load("suite: s\nrows:\n  - {label: a, predict: false, memory_cap: " + value + ", " +
             kRowConfig + "}\n");
      FAIL() << "accepted memory_cap " << value;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("rows[0] (a).memory_cap"), std::string::npos)
          << e.what();
    }
  }
}

// An h2oflex row on a CPU holds its device arena and host memory in RAM: both budgets must be
// given and fit in the cap, or the suite is refused before anything runs.
TEST(MemoryCapKey, ACpuRowsBudgetsMustFitTheCap) {
  SuiteFile f;
  const std::string hw = std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/local_cpu.yaml";
  auto refused = [&](const std::string& hardware, const std::string& expected) {
    const Suite s = f.load("suite: s\ndefaults: {hardware_profile: " + hw +
                           "}\nrows:\n  - {label: a, memory_cap: 1GiB, config: {model: opt-125m, "
                           "prompt_len: 8, gen_len: 2, dummy: true, hardware: " +
                           hardware + "}}\n");
    try {
      evaluate_suite(s, false, nullptr);
      ADD_FAILURE() << "accepted hardware " << hardware;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("rows[0] (a).memory_cap"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused("{device_mem: 0.75GiB, host_mem: 0.5GiB}", "is less than the row's config.hardware");
  refused("{host_mem: 0.5GiB}", "needs config.hardware.device_mem and host_mem");
  const Suite ok = f.load("suite: s\ndefaults: {hardware_profile: " + hw +
                          "}\nrows:\n  - {label: a, memory_cap: 1GiB, config: {model: opt-125m, "
                          "prompt_len: 8, gen_len: 2, dummy: true, hardware: {device_mem: 0.5GiB, "
                          "host_mem: 0.5GiB}}}\n");
  EXPECT_NO_THROW(evaluate_suite(ok, false, nullptr));  // no engine: nothing runs
}

}  // namespace
}  // namespace h2oflex
