// The OPT forward pass against Hugging Face transformers: logits at every prompt position of a
// left-padded batch and 16 greedy steps, recorded by tools/gen_opt_fixtures.py.
#include <gtest/gtest.h>

#include "engine/pipeline.h"
#include "policy/run_policy.h"
#include "tests/support/hf_fixtures.h"
#include "tests/support/scratch_dir.h"

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

// compress_weight against Hugging Face's full-precision logits: the error 4-bit weights cost
// (reported), bounded, and not zero (the compressed weights were used).
TEST(HuggingFace, CompressedWeightsLogitsError) {
  const nlohmann::json e = testing_support::expected();
  for (const char* name : {"tiny-preln", "tiny-postln"}) {
    const auto& ref = e["references"][name];
    const size_t rows = ref["prefill_logits"]["shape"][0].get<size_t>();
    const size_t vocab = ref["prefill_logits"]["shape"][1].get<size_t>();
    const std::vector<float> want =
        testing_support::read_floats(ref["prefill_logits"]["file"], rows * vocab);
    const auto got = testing_support::run_model(name, ops::ComputeType::F32,
                                                testing_support::prompt_set(e, name), 1,
                                                Device::CPU, testing_support::kFixtures, true);
    const testing_support::Errors err = testing_support::compare(got.prefill, want);
    std::printf("%s: prefill logits with 4-bit weights, max |error| %.4g = %.3g of max |logit|\n",
                name, err.max_abs, err.rel());
    RecordProperty(std::string(name) + "_compressed_logits_max_rel_error",
                   std::to_string(err.rel()));
    EXPECT_GT(err.max_abs, 1e-4) << name;
    EXPECT_LT(err.rel(), 0.25) << name;
  }
}

// The tiered pipeline on a real checkpoint: weights on disk, KV on host, 3 GPU batches of 1.
class HuggingFacePipeline : public testing_support::ScratchDirTest {};

TEST_F(HuggingFacePipeline, WeightsOnDiskMatchGreedyTokens) {
  check_pipeline_with_weights_on_disk(PipelineDevice::Cpu, /*cpu_cache_compute=*/false,
                                      dir().string());
}

}  // namespace
}  // namespace h2oflex
