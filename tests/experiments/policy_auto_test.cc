// `policy: auto` in a run config: the planner's policy (from the config's hardware profile and
// budgets) is what runs and what the result reports; without a profile the error names the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiments/common/run_config.h"
#include "experiments/plan/plan_command.h"
#include "experiments/run/run_command.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

const std::string kProfile =
    std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/local_cpu.yaml";

TEST(PolicyAuto, RunsThePlannedPolicyAndReportsIt) {
  const fs::path dir = fs::temp_directory_path() / ("h2oflex_auto_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kProfile, dir / "hw.yaml");
  // A relative profile path is the config file's directory's.
  std::ofstream(dir / "run.yaml") << "model: opt-125m\nprompt_len: 8\ngen_len: 2\n"
                                     "policy: auto\nhardware_profile: hw.yaml\n"
                                     "kv: {policy: h2o, heavy_tokens: 2, recent_tokens: 2}\n"
                                     "hardware: {device_mem: 128MiB, host_mem: 2GiB}\n";
  const RunConfig c = load_run_config((dir / "run.yaml").string(), {});
  EXPECT_EQ(fs::path(c.hardware_profile), dir / "hw.yaml");

  // The oracle: the planner called directly with the same inputs (bf16 or f32 weights as the
  // run resolves them, f32 hidden states).
  const double wbytes = resolve_compute_type("auto") == ops::ComputeType::BF16 ? 2 : 4;
  policy::KvPolicy kv;
  kv.policy = "h2o";
  kv.heavy_tokens = kv.recent_tokens = 2;
  policy::HardwareLimits limits;
  limits.device_mem = 128ull << 20;  // a block of a few hundred sequences, not thousands
  limits.host_mem = 2ull << 30;
  const policy::Policy want =
      plan_policy(model_shape_for("opt-125m", wbytes, 4), policy::load_hardware_profile(kProfile),
                  8, 2, kv, limits);

  testing::internal::CaptureStdout();
  const nlohmann::json r = run_experiment_config(c);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("policy: auto -> " + want.summary()), std::string::npos) << printed;
  EXPECT_EQ(r["policy"]["gpu_batch_size"].get<double>(), want.gpu_batch_size);
  EXPECT_EQ(r["policy"]["num_gpu_batches"].get<double>(), want.num_gpu_batches);
  EXPECT_EQ(r["policy"]["w_gpu"].get<double>(), want.w_gpu);
  EXPECT_EQ(r["policy"]["cache_cpu"].get<double>(), want.cache_cpu);
  EXPECT_EQ(r["policy"]["cpu_cache_compute"].get<bool>(), want.cpu_cache_compute);
  EXPECT_EQ(r["batch_size"].get<int>(), want.block_size());
  EXPECT_EQ(r["policy_auto"]["hardware"], "local_cpu");
  EXPECT_GT(r["policy_auto"]["predicted_total_tok_s"].get<double>(), 0);
  EXPECT_EQ(r["tokens"].size(), static_cast<size_t>(want.block_size()));
  fs::remove_all(dir);
}

TEST(PolicyAuto, NeedsAHardwareProfile) {
  YAML::Node n = YAML::Load("{model: opt-125m, prompt_len: 8, gen_len: 2, policy: auto}");
  const RunConfig c = parse_run_config(n, "cfg.yaml");
  try {
    run_experiment_config(c);
    FAIL() << "ran policy: auto without a profile";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cfg.yaml: policy: auto needs the key 'hardware_profile'"),
              std::string::npos)
        << e.what();
  }
  n["hardware_profile"] = "/nonexistent/hw.yaml";
  EXPECT_THROW(run_experiment_config(parse_run_config(n, "cfg.yaml")), InputError);
  n["hardware_profile"] = 3.5;  // read as text: still a missing file, never a crash
  EXPECT_THROW(run_experiment_config(parse_run_config(n, "cfg.yaml")), InputError);
}

// Compression is lossy, so the planner considers it only when the section asks:
// `policy: {auto: true, allow_compression: true}` runs what plan_policy(..., true) picks.
TEST(PolicyAuto, CompressionOnlyWhenAllowed) {
  const auto section = [](const char* yaml) {
    return policy::parse_policy_section(YAML::Load(yaml), "policy");
  };
  EXPECT_FALSE(section("auto").allow_compression);
  EXPECT_TRUE(section("{auto: true}").is_auto);
  EXPECT_TRUE(section("{auto: true, allow_compression: true}").allow_compression);
  for (const auto& [yaml, key] : std::vector<std::pair<const char*, const char*>>{
           {"{auto: false}", "policy.auto"},
           {"{auto: true, colour: red}", "colour"},
           {"{gpu_batch_size: 2, allow_compression: true}", "allow_compression"}}) {
    try {
      section(yaml);
      ADD_FAILURE() << "accepted " << yaml;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  YAML::Node n = YAML::Load(
      "{model: opt-125m, prompt_len: 8, gen_len: 2, policy: {auto: true, allow_compression: "
      "true}, hardware: {device_mem: 128MiB, host_mem: 2GiB}}");
  n["hardware_profile"] = kProfile;
  const RunConfig c = parse_run_config(n, "cfg.yaml");
  const double wbytes = resolve_compute_type("auto") == ops::ComputeType::BF16 ? 2 : 4;
  policy::HardwareLimits limits;
  limits.device_mem = 128ull << 20;
  limits.host_mem = 2ull << 30;
  const policy::Policy want =
      plan_policy(model_shape_for("opt-125m", wbytes, 4), policy::load_hardware_profile(kProfile),
                  8, 2, policy::KvPolicy{}, limits, /*allow_compression=*/true);
  testing::internal::CaptureStdout();
  const nlohmann::json r = run_experiment_config(c);
  testing::internal::GetCapturedStdout();
  EXPECT_EQ(r["policy_auto"]["allow_compression"], true);
  EXPECT_EQ(r["policy"]["compress_weight"].get<bool>(), want.compress_weight);
  EXPECT_EQ(r["policy"]["compress_cache"].get<bool>(), want.compress_cache);
  EXPECT_EQ(r["policy"]["weight_format"], want.weight_format.name());
  EXPECT_EQ(r["policy"]["cache_format"], std::get<std::string>(describe(want).at("cache_format")));
  EXPECT_EQ(r["batch_size"].get<int>(), want.block_size());
}

}  // namespace
}  // namespace h2oflex
