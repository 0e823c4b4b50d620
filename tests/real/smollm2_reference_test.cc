// SmolLM2-135M-Instruct (a real pretrained model: 30 layers, grouped-query attention 9 / 3,
// tied embeddings, rope_theta 100000) against Hugging Face transformers on eight prompts of 5 to
// 600 tokens, plain text and chat requests: f32 logits and greedy tokens, bf16 tokens, and the
// tiered pipeline with weights and KV cache on disk under H2O at a budget that covers every
// token.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "engine/pipeline.h"
#include "policy/kv_policy.h"
#include "tests/real/smollm2.h"

namespace h2oflex::real {
namespace {

int greedy_steps() {
  return smollm2_expected()["greedy_steps"].get<int>();
}

TEST(SmolLM2, F32LogitsAndGreedyTokensMatchTransformers) {
  ASSERT_FALSE(smollm2_dir().empty());
  const auto& prompts = smollm2_expected()["prompts"];
  ASSERT_GE(prompts.size(), 8u);
  for (const auto& p : prompts) {
    const std::string name = p["name"];
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    const GreedyRun r = greedy_alone(ops::ComputeType::F32, ids, greedy_steps());
    const double error = relative_logit_error(p["last_logits"], r.last_logits);
    const bool same = r.tokens == p["greedy_tokens"].get<std::vector<int32_t>>();
    std::printf("f32 %-13s %4zu tokens: logits' relative error %.2e, greedy tokens %s\n",
                name.c_str(), ids.size(), error, same ? "identical" : "DIFFER");
    EXPECT_LE(error, 1e-4) << name << " (" << ids.size() << " tokens)";
    EXPECT_EQ(r.tokens, p["greedy_tokens"].get<std::vector<int32_t>>()) << name;
  }
}

// bf16 rounds every matrix product's inputs: the tokens may part from f32's where two logits
// are close, so six prompts of eight must keep every token, and every prompt's logits must stay
// within bf16's error (2e-2 of the largest, as the families' bf16 checks).
TEST(SmolLM2, Bf16TokensMatchTransformersOnSixOfEight) {
  ASSERT_FALSE(smollm2_dir().empty());
  const auto& prompts = smollm2_expected()["prompts"];
  int same = 0;
  for (const auto& p : prompts) {
    const GreedyRun r =
        greedy_alone(ops::ComputeType::BF16, p["ids"].get<std::vector<int32_t>>(), greedy_steps());
    const bool kept = r.tokens == p["greedy_tokens"].get<std::vector<int32_t>>();
    const double error = relative_logit_error(p["last_logits"], r.last_logits);
    std::printf("bf16 %-13s logits' relative error %.2e, greedy tokens %s\n",
                p["name"].get<std::string>().c_str(), error, kept ? "identical" : "differ");
    same += kept;
    EXPECT_LE(error, 2e-2) << p["name"];
  }
  EXPECT_GE(same, 6) << "of " << prompts.size() << " prompts kept every greedy token";
}

// Weights and KV cache on disk, two GPU batches of three, H2O with heavy + recent slots covering
// prompt and generation: H2O's statistics run but evict nothing, so the tokens are the in-RAM
// full cache's — which are Hugging Face's.
TEST(SmolLM2, PipelineOnDiskWithCoveringH2OGivesTheInRamTokens) {
  ASSERT_FALSE(smollm2_dir().empty());
  std::vector<std::vector<int32_t>> prompts, want;
  int longest = 0;
  for (const char* name :
       {"capital", "boils", "chat-system", "chat-capital", "chat-turns", "prose-120"}) {
    for (const auto& p : smollm2_expected()["prompts"]) {
      if (p["name"] != name) continue;
      prompts.push_back(p["ids"].get<std::vector<int32_t>>());
      want.push_back(p["greedy_tokens"].get<std::vector<int32_t>>());
      longest = std::max<int>(longest, static_cast<int>(prompts.back().size()));
    }
  }
  ASSERT_EQ(prompts.size(), 6u);
  const LoadedModel& m = smollm2_model(DType::F32);
  GenerationSettings g;
  g.gen_len = greedy_steps();
  g.stop_at_eos = false;
  const std::vector<std::vector<int32_t>> in_ram =
      generate_in_ram(*m.source.model, m.weights, prompts, g).tokens;
  EXPECT_EQ(in_ram, want) << "the in-RAM batch (left-padded) differs from Hugging Face";

  const auto scratch =
      std::filesystem::temp_directory_path() / ("h2oflex-smollm2-" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  PipelineSpec spec;
  spec.device = PipelineDevice::Cpu;
  spec.model = m.source.model;
  spec.producer = m.source.producer;
  spec.weights_key = m.source.key;
  spec.policy.gpu_batch_size = 3;
  spec.policy.num_gpu_batches = 2;
  spec.policy.w_gpu = spec.policy.w_cpu = 0;          // weights on disk
  spec.policy.cache_gpu = spec.policy.cache_cpu = 0;  // KV cache on disk
  spec.policy.act_gpu = 100;
  spec.policy.act_cpu = 0;
  spec.limits.disk_path = scratch.string();
  spec.gen = g;
  const int half = (longest + greedy_steps() + 1) / 2;  // heavy + recent >= every position
  spec.gen.eviction = policy::kv_rule("h2o", 0, half, half);
  spec.prompts = prompts;
  const PipelineResult r = run_pipeline(spec);
  std::filesystem::remove_all(scratch);
  EXPECT_EQ(r.tokens, in_ram);
}

}  // namespace
}  // namespace h2oflex::real
