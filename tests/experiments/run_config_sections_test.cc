// The policy: and hardware: sections of a run config are parsed once, when the config is read,
// into the types every command hands the engine; a bad value is refused there, naming the file
// and the key, before any model is opened.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "experiments/common/run_config.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

RunConfig parse(const std::string& yaml) {
  return parse_run_config(YAML::Load(yaml), "run.yaml");
}

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

TEST(RunConfigSections, PolicyAndHardwareAreTyped) {
  const RunConfig c = parse(
      "model: opt-125m\n"
      "policy: {gpu_batch_size: 3, num_gpu_batches: 2, weights: {gpu: 0, cpu: 40}}\n"
      "hardware: {host_mem: 4GiB, disk_path: /nowhere}\n");
  ASSERT_TRUE(c.has_policy());
  EXPECT_FALSE(c.policy->is_auto);
  EXPECT_EQ(c.policy->policy.block_size(), 6);
  EXPECT_EQ(c.policy->policy.w_cpu, 40);
  EXPECT_EQ(c.hardware.host_mem, uint64_t{4} << 30);
  EXPECT_EQ(c.hardware.disk_path, "/nowhere");
}

TEST(RunConfigSections, AutoAndAbsentSections) {
  const RunConfig a = parse("model: opt-125m\npolicy: {auto: true, allow_compression: true}\n");
  ASSERT_TRUE(a.has_policy());
  EXPECT_TRUE(a.policy->is_auto);
  EXPECT_TRUE(a.policy->allow_compression);
  const RunConfig none = parse("model: opt-125m\npolicy:\n");
  EXPECT_FALSE(none.has_policy());
  EXPECT_EQ(none.hardware.host_mem, 0u);
}

TEST(RunConfigSections, ABadPolicyIsRefusedWhenTheConfigIsRead) {
  EXPECT_NE(error_of("model: opt-125m\npolicy: {gpu_batch_size: 0}\n")
                .find("run.yaml: policy.gpu_batch_size: 0 must be in [1, 1048576]"),
            std::string::npos)
      << error_of("model: opt-125m\npolicy: {gpu_batch_size: 0}\n");
  EXPECT_NE(error_of("model: opt-125m\npolicy: {gpu_batch: 2}\n").find("run.yaml: policy"),
            std::string::npos);
}

}  // namespace
}  // namespace h2oflex
