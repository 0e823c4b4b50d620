// The LLaMA family (grouped-query attention, llama3 and linear rotary scaling, explicit head_dim,
// a tied sharded checkpoint, Qwen2's biases) and GPT-NeoX (partial rotary with a parallel
// residual; full rotary sequential) against Hugging Face transformers: logits at every prompt
// position of a left-padded batch and 16 greedy steps, recorded by tools/gen_family_fixtures.py.
#include <gtest/gtest.h>

#include <filesystem>

#include "models/llama/llama_model.h"
#include "tests/support/hf_fixtures.h"

namespace h2oflex {
namespace {

using testing_support::check_reference;
using testing_support::kFamilyFixtures;

void check_f32(const std::string& dir, const std::string& ref) {
  check_reference(dir, ref, ops::ComputeType::F32, Device::CPU, 1e-4, kFamilyFixtures);
}

void check_bf16(const std::string& dir, const std::string& ref) {
  check_reference(dir, ref, ops::ComputeType::BF16, Device::CPU, 1e-4, kFamilyFixtures);
}

TEST(FamilyReference, LlamaGroupedQueryF32) {
  check_f32("llama-gqa", "llama-gqa");
}
TEST(FamilyReference, LlamaBf16CheckpointComputedInF32) {
  check_f32("llama-gqa-bf16", "llama-gqa-bf16");
}
TEST(FamilyReference, Llama3RopeScalingAndExplicitHeadDimF32) {
  check_f32("llama3-rope", "llama3-rope");
}
TEST(FamilyReference, TiedShardedLinearRopeF32) {
  check_f32("llama-tied-sharded", "llama-tied-sharded");
}
TEST(FamilyReference, Qwen2BiasesF32) {
  check_f32("qwen2-bias", "qwen2-bias");
}
TEST(FamilyReference, NeoxPartialRotaryParallelResidualF32) {
  check_f32("neox-partial", "neox-partial");
}
TEST(FamilyReference, NeoxSequentialTransformers5ConfigF32) {
  check_f32("neox-sequential", "neox-sequential");
}

TEST(FamilyReference, Bf16Compute) {
  for (const char* d : {"llama-gqa", "llama3-rope", "qwen2-bias", "neox-partial"}) check_bf16(d, d);
}

// The loader reads what each fixture's config says (the fixture records it independently).
TEST(FamilyReference, ConfigsReadAsRecorded) {
  const nlohmann::json e = testing_support::expected(kFamilyFixtures);
  for (const auto& [dir, ck] : e["checkpoints"].items()) {
    const ModelSource src = open_model_source(kFamilyFixtures + dir, false, 0);
    const auto& c = ck["config"];
    const KvGeometry g = src.model->kv_geometry();
    EXPECT_EQ(g.query_heads, c["num_heads"].get<int64_t>()) << dir;
    EXPECT_EQ(g.kv_heads, c["num_kv_heads"].get<int64_t>()) << dir;
    EXPECT_EQ(g.head_dim, c["head_dim"].get<int64_t>()) << dir;
    EXPECT_EQ(src.model->layers(), c["num_layers"].get<int64_t>()) << dir;
    EXPECT_EQ(src.model->vocab(), c["vocab_size"].get<int64_t>()) << dir;
    EXPECT_EQ(src.model->special_tokens().eos, c["eos_token_id"].get<int32_t>()) << dir;
    if (auto llama = std::dynamic_pointer_cast<const LlamaModel>(src.model)) {
      EXPECT_EQ(llama->config().tied_embeddings, c["tied"].get<bool>()) << dir;
      EXPECT_EQ(llama->config().qkv_bias, c["qkv_bias"].get<bool>()) << dir;
      const std::vector<float> inv = rope_inv_freq(
          {llama->config().head_dim, llama->config().rope_theta, llama->config().rope_scaling});
      const auto want = c["rope"]["inv_freq"].get<std::vector<double>>();
      ASSERT_EQ(inv.size(), want.size()) << dir;
      for (size_t i = 0; i < inv.size(); ++i) EXPECT_NEAR(inv[i], want[i], 1e-6 * want[i]) << dir;
    }
  }
}

// Each bad config the fixture script wrote is refused with its offending key named.
TEST(FamilyReference, BadConfigsNameTheirKey) {
  const nlohmann::json e = testing_support::expected(kFamilyFixtures);
  ASSERT_GE(e["bad"].size(), 4u);
  for (const auto& [name, bad] : e["bad"].items()) {
    const std::string key = bad["offending_key"].get<std::string>();
    try {
      open_model_source(kFamilyFixtures + bad["dir"].get<std::string>(), /*dummy=*/true, 0);
      ADD_FAILURE() << name << ": accepted";
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find(key), std::string::npos) << name << ": " << err.what();
    }
  }
}

// The tiered pipeline on a GQA checkpoint: weights on disk, KV on disk, 3 GPU batches of 1.
TEST(FamilyReference, PipelineWithEverythingOnDiskMatchesGreedyTokens) {
  const nlohmann::json e = testing_support::expected(kFamilyFixtures);
  const auto scratch =
      std::filesystem::temp_directory_path() / ("h2oflex-family-" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  const ModelSource src = open_model_source(kFamilyFixtures + "llama-gqa", false, 0);
  PipelineSpec spec;
  spec.device = PipelineDevice::Cpu;
  spec.model = src.model;
  spec.producer = src.producer;
  spec.weights_key = src.key;
  spec.policy.gpu_batch_size = 1;
  spec.policy.num_gpu_batches = 3;
  spec.policy.w_gpu = spec.policy.w_cpu = 0;
  spec.policy.cache_gpu = spec.policy.cache_cpu = 0;
  spec.policy.act_gpu = 100;
  spec.policy.act_cpu = 0;
  spec.limits.disk_path = scratch.string();
  spec.gen.gen_len = e["greedy_steps"].get<int>();
  spec.gen.stop_at_eos = false;
  spec.prompts = testing_support::prompts(testing_support::prompt_set(e, "llama-gqa"));
  const PipelineResult r = run_pipeline(spec);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.tokens[i],
              e["references"]["llama-gqa"]["greedy_tokens"][i].get<std::vector<int32_t>>());
  }
  std::filesystem::remove_all(scratch);
}

}  // namespace
}  // namespace h2oflex
