// run_generate in-process on the demo model: the tiered pipeline (a policy config) writes the
// same results as the in-RAM engine, OpenAI batch lines work end to end, and bad options stop
// the job before it writes anything.
#include <gtest/gtest.h>

#include <map>

#include "experiments/generate/generate_command.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::testing {
namespace {

using nlohmann::json;

class GenerateCommandTest : public GenerateScratchTest {
 protected:
  GenerateJobOptions options(const std::string& output) const {
    GenerateJobOptions o;
    o.model_dir = demo_model_dir().string();
    o.input = (dir() / "in.jsonl").string();
    o.output = (dir() / output).string();
    o.overrides = {"gen_len=6", "compute_dtype=f32"};
    return o;
  }
  std::map<std::string, json> results(const std::string& output) const {
    std::map<std::string, json> by_id;
    for (const json& j : read_jsonl(dir() / output)) by_id[j.at("id")] = j;
    return by_id;
  }
};

std::string plain_input(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    std::string prompt = "tell me";
    for (int w = 0; w < (i * 5) % 17; ++w) prompt += " more";
    text += json{{"id", std::string("x").append(std::to_string(i))}, {"prompt", prompt}}.dump();
    text += "\n";
  }
  return text;
}

TEST_F(GenerateCommandTest, PipelinePolicyMatchesInRam) {
  write_text(dir() / "in.jsonl", plain_input(14));
  const std::string kv = "kv={policy: h2o, heavy_ratio: 0.3, recent_ratio: 0.3}";
  GenerateJobOptions in_ram = options("ram.jsonl");
  in_ram.overrides.push_back("batch_size=6");
  in_ram.overrides.push_back(kv);
  ASSERT_EQ(run_generate(in_ram), 0);

  write_text(dir() / "run.yaml",
             "policy:\n"
             "  gpu_batch_size: 3\n"
             "  num_gpu_batches: 2\n"
             "  weights: {gpu: 0, cpu: 100}\n"
             "  cache: {gpu: 0, cpu: 100}\n"
             "  activations: {gpu: 100, cpu: 0}\n"
             "batch_size: 99\n");  // ignored: the policy's block (3 x 2) sets the block size
  GenerateJobOptions piped = options("pipe.jsonl");
  piped.config_path = (dir() / "run.yaml").string();
  piped.overrides.push_back(kv);
  ASSERT_EQ(run_generate(piped), 0);

  const auto a = results("ram.jsonl"), b = results("pipe.jsonl");
  EXPECT_EQ(a.size(), 14u);
  EXPECT_EQ(a, b);
}

TEST_F(GenerateCommandTest, OpenAiBatchLinesEndToEnd) {
  write_text(dir() / "in.jsonl",
             R"({"custom_id": "c1", "method": "POST", "url": "/v1/completions", "body": )"
             R"({"model": "opt-demo", "prompt": "The river", "max_tokens": 4}})"
             "\n"
             R"({"custom_id": "c2", "body": {"prompt": "A stone", "max_tokens": 9, "stop": ["e"]}})"
             "\n"
             R"({"custom_id": "c3", "body": {"prompt": "Hot", "temperature": 0.8, "top_p": 0.9}})"
             "\n");
  GenerateJobOptions o = options("out.jsonl");
  o.summary_json = (dir() / "summary.json").string();
  ASSERT_EQ(run_generate(o), 0);
  const auto r = results("out.jsonl");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.at("c1")["completion_tokens"], 4);
  EXPECT_EQ(r.at("c1")["prompt_tokens"], demo_tokenizer().encode("The river").size());
  EXPECT_EQ(r.at("c3")["completion_tokens"], 6);  // the config's gen_len
  const std::string c2 = r.at("c2")["text"];
  EXPECT_EQ(c2.find('e'), std::string::npos) << c2;
  EXPECT_LE(r.at("c2")["completion_tokens"].get<int>(), 9);
  const json summary = json::parse(read_text(dir() / "summary.json"));
  EXPECT_EQ(summary["completed"], 3);
  EXPECT_EQ(summary["blocks_run"], 2);  // greedy and sampled requests never share a block
}

TEST_F(GenerateCommandTest, BadOptionsStopBeforeAnyOutput) {
  write_text(dir() / "in.jsonl", plain_input(2));
  auto expect_input_error = [&](GenerateJobOptions o, const char* what) {
    EXPECT_THROW(run_generate(o), InputError) << what;
    EXPECT_FALSE(fs::exists(o.output)) << what;
  };
  GenerateJobOptions o = options("out.jsonl");
  o.model_dir = (dir() / "missing-model").string();
  expect_input_error(o, "missing model");
  o = options("out.jsonl");
  o.model_dir = dir().string();  // a directory without config.json / tokenizer
  expect_input_error(o, "empty model directory");
  o = options("out.jsonl");
  o.input = (dir() / "missing.jsonl").string();
  expect_input_error(o, "missing input");
  o = options("out.jsonl");
  o.overrides.push_back("no_such_key=1");
  expect_input_error(o, "unknown config key");
  o = options("out.jsonl");
  o.overrides.push_back("prompt_ids=[[5, 6]]");
  expect_input_error(o, "prompt_ids");
  o = options("out.jsonl");
  o.config_path = (dir() / "missing.yaml").string();
  expect_input_error(o, "missing config");
  o = options("no-such-dir/out.jsonl");
  expect_input_error(o, "missing output directory");
}

}  // namespace
}  // namespace h2oflex::testing
