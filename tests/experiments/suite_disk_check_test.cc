// The suite's disk check before a row runs: it looks where the disk tier will write, and counts
// an offload layout already there as reused, as the engine's own check does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model_layout.h"
#include "experiments/common/model_source.h"
#include "experiments/suite/experiment_runner.h"
#include "policy/cost_model.h"
#include "tests/offload/test_support.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

using testing_support::TempDir;

YAML::Node row_config(const std::string& compute_dtype) {
  return YAML::Load("{model: opt-125m, dummy: true, seed: 1, compute_dtype: " + compute_dtype +
                    "}");
}

// A layout's data file of `bytes` bytes where a bf16 run of opt-125m (seed 1) keeps it.
void write_bf16_layout(const fs::path& disk, uint64_t bytes) {
  const std::string key = open_model_source("opt-125m", true, 1).key;
  const fs::path dir = model_layout_dir(disk.string(), key, DType::BF16);
  fs::create_directories(dir);
  std::ofstream(dir / WeightLayout::kDataFile) << std::string(bytes, 'w');
}

TEST(SuiteDiskCheck, FindsTheLayoutTheRowWouldReuse) {
  const TempDir disk;
  EXPECT_EQ(reusable_layout_bytes(row_config("bf16"), disk.path(), false), 0u);
  write_bf16_layout(disk.path(), 4096);
  EXPECT_EQ(reusable_layout_bytes(row_config("bf16"), disk.path(), false), 4096u);
  EXPECT_EQ(reusable_layout_bytes(row_config("bfloat16"), disk.path(), false), 4096u);
  // Another matrix type, another layout; compressed weights, another layout.
  EXPECT_EQ(reusable_layout_bytes(row_config("f32"), disk.path(), false), 0u);
  EXPECT_EQ(reusable_layout_bytes(row_config("bf16"), disk.path(), true), 0u);
  // auto is chosen when the run starts: any of the model's layouts may be the one.
  EXPECT_EQ(reusable_layout_bytes(row_config("auto"), disk.path(), false), 4096u);
  // Another seed is other weights.
  YAML::Node other = row_config("bf16");
  other["seed"] = 2;
  EXPECT_EQ(reusable_layout_bytes(other, disk.path(), false), 0u);
  // A row the run would refuse is left to the run to report.
  EXPECT_EQ(reusable_layout_bytes(YAML::Load("{model: no-such-model}"), disk.path(), false), 0u);
}

TEST(SuiteDiskCheck, CountsOnlyWhatIsNotOnDiskAlready) {
  const TempDir disk;
  policy::HardwareLimits limits;
  limits.disk_path = disk.path();
  const fs::space_info space = fs::space(disk.path());
  policy::CostEstimate e;
  e.peak.disk = static_cast<double>(space.available) + 64.0 * (1 << 30);  // 64 GiB too many
  policy::HardwareProfile hw;
  hw.compute_device = policy::ComputeDevice::Cpu;
  const std::string reason = machine_skip_reason(hw, &e, limits, 0);
  EXPECT_NE(reason.find("free at " + disk.path()), std::string::npos) << reason;
  // With a layout of 128 GiB already there, what is new fits.
  EXPECT_EQ(machine_skip_reason(hw, &e, limits, uint64_t{128} << 30), "");
  // Without a disk_path the check looks where the disk tier writes: the temporary directory.
  limits.disk_path.clear();
  EXPECT_NE(
      machine_skip_reason(hw, &e, limits, 0).find("free at " + fs::temp_directory_path().string()),
      std::string::npos);
}

}  // namespace
}  // namespace h2oflex
