// The OPT forward pass against Hugging Face transformers: logits at every prompt position of a
// left-padded batch and 16 greedy steps, recorded by tools/gen_opt_fixtures.py.
#include <gtest/gtest.h>

#include <filesystem>

#include "policy/placement.h"
#include "runtime/engine/pipeline.h"
#include "tests/support/hf_fixtures.h"

namespace h2oflex {
namespace {

using testing_support::check_reference;
using testing_support::expected;
using testing_support::kFixtures;
using testing_support::prompts;

TEST(HuggingFace, PreLayerNormF32) {
  check_reference("tiny-preln", "tiny-preln", ops::ComputeType::F32);
}
TEST(HuggingFace, PostLayerNormWithProjectionsF32) {
  check_reference("tiny-postln", "tiny-postln", ops::ComputeType::F32);
}
TEST(HuggingFace, ShardedCheckpointF32) {
  check_reference("tiny-postln-sharded", "tiny-postln", ops::ComputeType::F32);
}
TEST(HuggingFace, Fp16CheckpointComputedInF32) {
  check_reference("tiny-preln-fp16", "tiny-preln-fp16", ops::ComputeType::F32);
}
TEST(HuggingFace, PreLayerNormBf16) {
  check_reference("tiny-preln", "tiny-preln", ops::ComputeType::BF16);
}
TEST(HuggingFace, PostLayerNormBf16) {
  check_reference("tiny-postln", "tiny-postln", ops::ComputeType::BF16);
}

// The tiered pipeline on a real checkpoint: weights on disk, KV on host, 3 GPU batches of 1.
TEST(HuggingFace, PipelineWithWeightsOnDiskMatchesGreedyTokens) {
  const nlohmann::json e = expected();
  const ModelSource src = open_model_source(kFixtures + "tiny-postln", false, 0);
  PipelineSpec spec;
  spec.cfg = src.config;
  spec.producer = src.producer;
  spec.weights_key = src.key;
  spec.policy.gpu_batch_size = 1;
  spec.policy.num_gpu_batches = 3;
  spec.policy.w_gpu = 0;
  spec.policy.w_cpu = 0;
  spec.policy.cache_gpu = 0;
  spec.policy.cache_cpu = 100;
  const auto scratch =
      std::filesystem::temp_directory_path() / ("h2oflex-hf-" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  spec.limits.disk_path = scratch.string();
  spec.gen.gen_len = e["greedy_steps"].get<int>();
  spec.prompts = prompts(e);
  const PipelineResult r = run_pipeline(spec);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.tokens[i],
              e["references"]["tiny-postln"]["greedy_tokens"][i].get<std::vector<int32_t>>());
  }
}

}  // namespace
}  // namespace h2oflex
