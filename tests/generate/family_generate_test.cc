// `generate` on a LLaMA-3-style model directory (dummy weights, grouped-query attention) with its
// own tokenizer files: prompts get the model's BOS the way its post-processor says, and the job
// runs end to end through the in-RAM engine and the pipeline alike.
#include <gtest/gtest.h>

#include "experiments/generate/generate_command.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::testing {
namespace {

using nlohmann::json;

class FamilyGenerateTest : public GenerateScratchTest {
 protected:
  fs::path make_model() {
    const fs::path model = dir() / "llama3-tiny";
    fs::create_directories(model);
    const fs::path tok = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/tokenizer-llama3";
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
      fs::copy_file(tok / f, model / f);
    }
    const json config = {{"model_type", "llama"},       {"hidden_size", 64},
                         {"num_attention_heads", 8},    {"num_key_value_heads", 2},
                         {"num_hidden_layers", 2},      {"intermediate_size", 96},
                         {"vocab_size", 2048},          {"max_position_embeddings", 128},
                         {"rope_theta", 500000.0},      {"bos_token_id", 2028},
                         {"eos_token_id", {2029, 2033}}};
    write_text(model / "config.json", config.dump());
    return model;
  }
  GenerateJobOptions options(const fs::path& model, const std::string& output) const {
    GenerateJobOptions o;
    o.model_dir = model.string();
    o.input = (dir() / "in.jsonl").string();
    o.output = (dir() / output).string();
    o.overrides = {"dummy=true", "gen_len=5", "compute_dtype=f32", "batch_size=3"};
    return o;
  }
};

TEST_F(FamilyGenerateTest, PromptsCarryTheModelsBosAndPipelineMatchesInRam) {
  const fs::path model = make_model();
  const BpeTokenizer tok = load_tokenizer(model);
  ASSERT_EQ(tok.bos_to_prepend(), std::optional<int32_t>(2028));
  const std::vector<std::string> prompts = {"Hello world", "The year 2024 had 366 days.",
                                            "naïve café"};
  std::string input;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::string id = "p";  // (not "p" + to_string: GCC 12 warns falsely on that)
    id += std::to_string(i);
    input += json{{"id", id}, {"prompt", prompts[i]}}.dump() + "\n";
  }
  write_text(dir() / "in.jsonl", input);
  ASSERT_EQ(run_generate(options(model, "ram.jsonl")), 0);

  write_text(dir() / "run.yaml",
             "policy:\n"
             "  gpu_batch_size: 1\n"
             "  num_gpu_batches: 3\n"
             "  weights: {gpu: 0, cpu: 0}\n"
             "  cache: {gpu: 0, cpu: 0}\n"
             "  activations: {gpu: 100, cpu: 0}\n"
             "hardware: {disk_path: " +
                 (dir() / "disk").string() + "}\n");
  fs::create_directories(dir() / "disk");
  GenerateJobOptions piped = options(model, "pipe.jsonl");
  piped.config_path = (dir() / "run.yaml").string();
  ASSERT_EQ(run_generate(piped), 0);

  const auto ram = read_jsonl(dir() / "ram.jsonl"), pipe = read_jsonl(dir() / "pipe.jsonl");
  ASSERT_EQ(ram.size(), prompts.size());
  EXPECT_EQ(ram, pipe);
  for (const json& r : ram) {
    const size_t i = std::stoul(r.at("id").get<std::string>().substr(1));
    // The text's own tokens plus the BOS the template puts first.
    EXPECT_EQ(r.at("prompt_tokens").get<size_t>(), tok.encode(prompts[i], false).size() + 1)
        << r.dump();
    EXPECT_EQ(tok.encode(prompts[i], true).front(), 2028);
  }
}

}  // namespace
}  // namespace h2oflex::testing
