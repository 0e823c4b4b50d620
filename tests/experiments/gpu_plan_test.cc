// Every GPU configuration that a lent GPU machine is to run — the GPU check's cases
// (experiments/gpu_check/) and the rows of the T4 suites — planned here, without a GPU, by the
// engine's own memory plan (`run --plan-only`: the device bytes include the CUDA context, the
// cuBLAS workspaces, the stream-ordered pool and the ops' scratch) and held to its budgets, so
// that none is found over budget on the machine, where minutes are scarce.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "experiments/common/run_config.h"
#include "experiments/run/run_command.h"
#include "experiments/suite/experiment_suite.h"
#include "policy/run_policy.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The lent GPU machine: 128 GiB of RAM, of which a run may plan 90% (the suites' own rule,
// machine_skip_reason), 64 GiB of disk, and an H100's ~78 GiB of device memory.
constexpr double kLentHostBytes = 0.9 * 128 * kGiB;
constexpr double kLentDeviceBytes = 78 * kGiB;

std::string source(const std::string& rel) {
  return std::string(H2OFLEX_SOURCE_DIR) + "/" + rel;
}

struct Planned {
  double device = 0, host = 0, disk = 0;
};

// Plans `config` on the GPU; a tier over its budget throws InputError naming it.
Planned plan_on_gpu(RunConfig config) {
  config.compute_device = "cuda";
  const nlohmann::json r = run_experiment_config(config, /*plan_only=*/true);
  const nlohmann::json& b = r.at("planned_bytes");
  return {b.at("device").get<double>(), b.at("host").get<double>(), b.at("disk").get<double>()};
}

TEST(GpuPlan, EveryGpuCheckCaseFitsItsBudgetsAndTheLentMachine) {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(source("experiments/gpu_check"))) {
    if (entry.path().extension() != ".yaml") continue;
    ++cases;
    const std::string name = entry.path().filename().string();
    const RunConfig c = load_run_config(entry.path().string(), {});
    ASSERT_EQ(c.compute_device, "cuda") << name << ": a GPU case must not fall back to the CPU";
    Planned p;
    ASSERT_NO_THROW(p = plan_on_gpu(c)) << name;
    EXPECT_LE(p.device, kLentDeviceBytes) << name;
    EXPECT_LE(p.host, kLentHostBytes) << name;
    EXPECT_EQ(p.disk, 0) << name << ": the check uses no disk tier";
    if (c.hardware.device_mem > 0) {
      EXPECT_LE(p.device, static_cast<double>(c.hardware.device_mem)) << name;
    }
  }
  EXPECT_EQ(cases, 3);
}

// Each measured row of a suite, planned on the GPU against the row's own `hardware:` budgets
// (with `device_budget`, that device budget instead); returns the largest bytes of any row.
Planned plan_suite_rows(const std::string& suite_file, const std::string& device_budget = "") {
  const Suite s = load_suite(source("experiments/suites/" + suite_file));
  Planned most;
  int planned = 0;
  for (const SuiteRow& row : s.rows) {
    if (!row.predict || !row.measure || row.peer) continue;
    ++planned;
    const std::string where = suite_file + " " + row.where;
    EXPECT_TRUE(row.config["hardware"]) << where << ": no hardware:";
    YAML::Node config = YAML::Clone(row.config);
    if (!device_budget.empty()) config["hardware"]["device_mem"] = device_budget;
    Planned p;
    try {
      p = plan_on_gpu(parse_run_config(config, where));
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << ": " << e.what();
      continue;
    }
    most.device = std::max(most.device, p.device);
    most.host = std::max(most.host, p.host);
    most.disk = std::max(most.disk, p.disk);
  }
  EXPECT_GT(planned, 0) << suite_file;
  return most;
}

// The published T4 rows within the T4 machine's 208 GiB of RAM. Their device budget is lifted
// here: as the engine plans them, some need more than the T4's 16 GiB (a large prefill's f32
// activations and working buffers; experiments/README.md), which is what a run of them reports.
TEST(GpuPlan, TheT4SuitesFitTheT4sHostRam) {
  for (const char* suite : {"flexgen_t4.yaml", "h2o_t4.yaml"}) {
    const Planned most = plan_suite_rows(suite, "1TiB");
    EXPECT_LE(most.host, 208 * kGiB) << suite;
  }
}

// The variants for the lent machine fit it whole: a T4's device budget, 90% of its 128 GiB of
// RAM, no disk.
TEST(GpuPlan, TheGpuMachineVariantsFitTheLentMachine) {
  for (const char* suite : {"flexgen_t4_gpu_machine.yaml", "h2o_t4_gpu_machine.yaml"}) {
    const Planned most = plan_suite_rows(suite);
    EXPECT_LE(most.device, 16 * kGiB) << suite << ": still a T4's device";
    EXPECT_LE(most.host, kLentHostBytes) << suite;
    EXPECT_EQ(most.disk, 0) << suite;
  }
}

}  // namespace
}  // namespace h2oflex
