// The OPT forward pass against Hugging Face transformers: logits at every prompt position of a
// left-padded batch and 16 greedy steps, recorded by tools/gen_opt_fixtures.py.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/pipeline.h"
#include "policy/run_policy.h"
#include "tests/support/hf_fixtures.h"

namespace h2oflex {
namespace {

using testing_support::check_pipeline_with_weights_on_disk;
using testing_support::check_reference;

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
  const auto scratch =
      std::filesystem::temp_directory_path() / ("h2oflex-hf-" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  check_pipeline_with_weights_on_disk(PipelineDevice::Cpu, /*cpu_cache_compute=*/false,
                                      scratch.string());
}

}  // namespace
}  // namespace h2oflex
