// Bad input to `h2oflex run`: a clear message naming the culprit, exit code 2, no result file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/compute_device.h"
#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using h2oflex::testing_support::Outcome;

class RunErrors : public h2oflex::testing_support::ScratchDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir() / name) << text;
    return dir() / name;
  }

  Outcome run(const std::string& args) { return h2oflex::testing_support::run_h2oflex(args); }

  // Runs a config that must be refused; checks exit code 2, the message, and no result file.
  void expect_refused(const std::string& config, const std::string& message) {
    const fs::path cfg = write("config.yaml", config);
    const fs::path json = dir() / "result.json";
    const Outcome o = run("run " + cfg.string() + " --json " + json.string());
    EXPECT_EQ(o.exit_code, 2) << o.output;
    EXPECT_NE(o.output.find(message), std::string::npos) << "expected '" << message << "' in:\n"
                                                         << o.output;
    EXPECT_FALSE(fs::exists(json)) << "a result was written";
  }
};

TEST_F(RunErrors, MalformedYaml) {
  expect_refused("model: opt-125m\nprompt_len: [1, 2\n", "malformed YAML at line");
}

TEST_F(RunErrors, UnknownKeyIsNamed) {
  expect_refused("model: opt-125m\nprompt_lenght: 8\n", "unknown key 'prompt_lenght'");
}

TEST_F(RunErrors, UnknownNestedKeyIsNamed) {
  expect_refused("model: opt-125m\nkv: {policy: h2o, heavy_ratio: 0.1, recnt_ratio: 0.1}\n",
                 "kv.recnt_ratio");
}

TEST_F(RunErrors, WrongTypeIsNamed) {
  expect_refused("model: opt-125m\ngen_len: many\n", "key 'gen_len': expected an integer");
}

TEST_F(RunErrors, MissingModelDirectory) {
  expect_refused("model: " + (dir() / "no-such-model").string() + "\ndummy: false\n",
                 "nor an existing directory");
}

TEST_F(RunErrors, TruncatedSafetensors) {
  const fs::path model = dir() / "model";
  fs::create_directories(model);
  const fs::path src = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt/tiny-preln";
  fs::copy_file(src / "config.json", model / "config.json");
  fs::copy_file(src / "model.safetensors", model / "model.safetensors");
  fs::resize_file(model / "model.safetensors", fs::file_size(model / "model.safetensors") / 2);
  expect_refused("model: " + model.string() + "\ndummy: false\nprompt_len: 4\ngen_len: 2\n",
                 "model.safetensors");
}

TEST_F(RunErrors, ShapeDisagreesWithConfig) {
  const fs::path model = dir() / "model";
  fs::create_directories(model);
  const fs::path src = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt/tiny-preln";
  fs::copy_file(src / "model.safetensors", model / "model.safetensors");
  std::ifstream in(src / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "\"ffn_dim\": 256", to = "\"ffn_dim\": 128";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), to);
  write("model/config.json", text);
  expect_refused("model: " + model.string() + "\ndummy: false\nprompt_len: 4\ngen_len: 2\n",
                 "fc1.weight");
}

TEST_F(RunErrors, PolicyOverBudgetShowsTheEstimate) {
  expect_refused(
      "model: opt-125m\nprompt_len: 8\ngen_len: 2\n"
      "policy: {gpu_batch_size: 2, num_gpu_batches: 1, weights: {gpu: 100, cpu: 0}}\n"
      "hardware: {device_mem: 1MiB}\n",
      "device needs an estimated");
}

TEST_F(RunErrors, PercentagesThatDoNotSum) {
  expect_refused(
      "model: opt-125m\npolicy: {gpu_batch_size: 1, num_gpu_batches: 1,"
      " weights: {gpu: 70, cpu: 50}}\n",
      "policy.weights");
}

TEST_F(RunErrors, StagesWithoutTheirProcessesAreRefused) {
  expect_refused(
      "model: opt-125m\ndummy: true\nprompt_len: 4\ngen_len: 2\n"
      "policy: {gpu_batch_size: 1, num_gpu_batches: 2, weights: {cpu: 100}, stages: 2}\n",
      "policy.stages: 2 stages but the job has 1 process (run it as `mpirun -np 2");
}

TEST_F(RunErrors, UnknownComputeDeviceIsNamed) {
  expect_refused("model: opt-125m\ncompute_device: tpu\n",
                 "compute_device: expected auto, cpu or cuda, got 'tpu'");
}

// compute_device: cuda runs on the GPU where one is usable, and is refused (not silently run on
// the CPU) where none is.
TEST_F(RunErrors, CudaComputeDeviceRunsOnAGpuOrIsRefused) {
  const std::string config =
      "model: opt-125m\nprompt_len: 4\ngen_len: 2\nbatch_size: 2\ncompute_device: cuda\n";
  std::string why;
  if (!h2oflex::cuda_compute_available(&why)) {
    expect_refused(config, "compute_device: cuda requested, but " + why);
    return;
  }
  const fs::path cfg = write("config.yaml", config);
  const fs::path json = dir() / "result.json";
  const Outcome o = run("run " + cfg.string() + " --json " + json.string());
  ASSERT_EQ(o.exit_code, 0) << o.output;
  std::ifstream in(json);
  EXPECT_EQ(nlohmann::json::parse(in).at("compute_device"), "cuda");
}

TEST_F(RunErrors, GoodConfigWritesAResult) {
  const fs::path cfg =
      write("ok.yaml", "model: opt-125m\nprompt_len: 4\ngen_len: 2\nbatch_size: 1\n");
  const fs::path json = dir() / "ok.json";
  const Outcome o = run("run " + cfg.string() + " --json " + json.string());
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_TRUE(fs::exists(json));
  EXPECT_NE(o.output.find("total throughput"), std::string::npos) << o.output;
}

TEST_F(RunErrors, ProjectedRunIsFlagged) {
  const fs::path cfg = write("p.yaml",
                             "model: opt-125m\nprompt_len: 4\ngen_len: 6\nprojected_steps: 2\n"
                             "policy: {gpu_batch_size: 2, num_gpu_batches: 1}\n");
  const fs::path json = dir() / "p.json";
  const Outcome o = run("run " + cfg.string() + " --json " + json.string());
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("projected: True"), std::string::npos) << o.output;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"decode_steps_run\": 2"), std::string::npos) << text;
}

}  // namespace

namespace {

// Without a policy everything is held in memory: a batch that cannot fit is refused up front
// with the estimate, instead of dying in an allocation.
TEST_F(RunErrors, InRamBatchBeyondMemoryIsRefusedWithTheEstimate) {
  expect_refused("model: opt-125m\ndummy: true\nprompt_len: 8\ngen_len: 2\nbatch_size: 100000\n",
                 "batch_size 100000: without a policy the run needs an estimated");
}

TEST_F(RunErrors, InRamRunOverTheHostBudgetIsRefused) {
  expect_refused(
      "model: opt-125m\ndummy: true\nprompt_len: 8\ngen_len: 2\nbatch_size: 1\n"
      "hardware: {host_mem: 64MiB}\n",
      "but hardware.host_mem is 64.00 MiB");
}

// A config.json with a vocabulary of 10^9 tokens: the embedding alone is estimated, not allocated.
TEST_F(RunErrors, InRamHugeVocabularyIsRefusedWithTheEstimate) {
  const fs::path model = dir() / "huge-vocab";
  fs::create_directories(model);
  std::ofstream(model / "config.json")
      << R"({"model_type": "opt", "hidden_size": 64, "ffn_dim": 128, "num_attention_heads": 4,)"
      << R"( "num_hidden_layers": 1, "vocab_size": 1000000000, "max_position_embeddings": 64,)"
      << R"( "word_embed_proj_dim": 64})";
  expect_refused("model: " + model.string() + "\ndummy: true\nprompt_len: 4\ngen_len: 2\n",
                 "without a policy the run needs an estimated");
}

// A prompt id beyond the vocabulary is named, not looked up out of bounds.
TEST_F(RunErrors, PromptIdOutsideTheVocabularyIsNamed) {
  expect_refused(
      "model: opt-125m\ndummy: true\nprompt_len: 4\ngen_len: 2\nprompt_ids: [[2, 1000000000]]\n",
      "prompt token id 1000000000 outside the vocabulary [0, 50272)");
}

}  // namespace

// Family settings the engine does not implement are refused up front by `run`, naming the key.
class FamilyRunErrors : public RunErrors {
 protected:
  void expect_config_refused(nlohmann::json config, const std::string& key) {
    const fs::path model = dir() / "model";
    fs::create_directories(model);
    std::ofstream(model / "config.json") << config.dump();
    expect_refused("model: " + model.string() + "\ndummy: true\nprompt_len: 4\ngen_len: 2\n",
                   "\"" + key + "\"");
  }
  static nlohmann::json llama() {
    return {{"model_type", "llama"},    {"hidden_size", 32},
            {"num_attention_heads", 4}, {"num_key_value_heads", 2},
            {"num_hidden_layers", 1},   {"intermediate_size", 64},
            {"vocab_size", 50},         {"max_position_embeddings", 32}};
  }
};

TEST_F(FamilyRunErrors, UnsupportedRopeScaling) {
  nlohmann::json c = llama();
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_config_refused(c, "rope_scaling.rope_type");
}

TEST_F(FamilyRunErrors, SlidingWindow) {
  nlohmann::json c = llama();
  c["model_type"] = "mistral";
  c["sliding_window"] = 16;
  expect_config_refused(c, "sliding_window");
}

TEST_F(FamilyRunErrors, HeadsNotDivisibleByKvHeads) {
  nlohmann::json c = llama();
  c["num_key_value_heads"] = 3;
  expect_config_refused(c, "num_key_value_heads");
}

TEST_F(FamilyRunErrors, UnimplementedModelType) {
  nlohmann::json c = llama();
  c["model_type"] = "falcon";
  expect_config_refused(c, "model_type");
}

// --plan-only: the engine's memory plan and nothing else — no weight layout, no KV files.
TEST_F(RunErrors, PlanOnlyPlansWithoutRunning) {
  fs::create_directories(dir() / "disk");
  auto config = [&](const std::string& hardware_extra) {
    return "model: opt-125m\ndummy: true\nprompt_len: 16\ngen_len: 4\n"
           "policy: {gpu_batch_size: 2, num_gpu_batches: 2, weights: {gpu: 0, cpu: 0},"
           " cache: {gpu: 0, cpu: 100}, activations: {gpu: 100, cpu: 0}}\n"
           "hardware: {disk_path: " +
           (dir() / "disk").string() + hardware_extra + "}\n";
  };
  const fs::path cfg = write("plan.yaml", config(""));
  const fs::path json = dir() / "plan.json";
  const Outcome o = run("run " + cfg.string() + " --plan-only --json " + json.string());
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("planned: device"), std::string::npos) << o.output;
  std::ifstream in(json);
  const nlohmann::json r = nlohmann::json::parse(in);
  EXPECT_TRUE(r.at("plan_only").get<bool>());
  EXPECT_EQ(r.at("block").get<int>(), 4);
  EXPECT_GT(r.at("planned_bytes").at("disk").get<double>(), 250e6);  // opt-125m's f32 weights
  EXPECT_TRUE(fs::is_empty(dir() / "disk")) << "a plan wrote to the disk tier";
  // A plan over a budget is refused like the run would be; a run without a policy has no plan.
  const Outcome over =
      run("run " + write("over.yaml", config(", host_mem: 1MiB")).string() + " --plan-only");
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_NE(over.output.find("host needs an estimated"), std::string::npos) << over.output;
  EXPECT_EQ(
      run("run " + write("noplan.yaml", "model: opt-125m\n").string() + " --plan-only").exit_code,
      2);
}
