// The model and the pipeline computing on a GPU: the Hugging Face fixtures, tokens identical
// across placements (weights / KV / activations on device, host, disk; attention delegated or
// not), and H2O keeping the same tokens as on the CPU.
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <filesystem>

#include "tests/support/family_models.h"
#include "tests/support/hf_fixtures.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

using testing_support::check_reference;
using testing_support::expect_invariant;
using testing_support::tiny_config;

// cuBLAS f32 GEMMs stay f32 (no TF32) but sum in another order than oneDNN: a looser absolute
// bound than the CPU's 1e-4; greedy tokens must still be identical.
constexpr double kGpuF32MaxAbs = 1e-3;

// Removes the per-process scratch directory (weight layouts, disk tier files) at exit.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(testing_support::temp_dir()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

TEST(GpuHuggingFace, PreLayerNormF32) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  check_reference("tiny-preln", "tiny-preln", ops::ComputeType::F32, Device::CUDA, kGpuF32MaxAbs);
}

TEST(GpuHuggingFace, PostLayerNormWithProjectionsF32) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  check_reference("tiny-postln", "tiny-postln", ops::ComputeType::F32, Device::CUDA, kGpuF32MaxAbs);
}

TEST(GpuHuggingFace, Fp16CheckpointComputedInF32) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  check_reference("tiny-preln-fp16", "tiny-preln-fp16", ops::ComputeType::F32, Device::CUDA,
                  kGpuF32MaxAbs);
}

TEST(GpuHuggingFace, PreLayerNormBf16) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  check_reference("tiny-preln", "tiny-preln", ops::ComputeType::BF16, Device::CUDA);
}

// The tiered pipeline on the GPU with a real checkpoint: weights on disk (read through pinned
// staging into device workspaces), KV on host with delegated attention, 3 GPU batches of 1.
TEST(GpuHuggingFace, PipelineWithWeightsOnDiskMatchesGreedyTokens) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  testing_support::check_pipeline_with_weights_on_disk(
      PipelineDevice::Cuda, /*cpu_cache_compute=*/true, testing_support::temp_dir());
}

TEST(GpuPipeline, FullCacheTokensIdenticalAcrossPlacements) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  expect_invariant(tiny_config(true), KvRule{}, 6, 12, PipelineDevice::Cuda);
}

TEST(GpuPipeline, PostLayerNormModel) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  expect_invariant(tiny_config(false), KvRule{}, 5, 6, PipelineDevice::Cuda);
}

TEST(GpuPipeline, H2OKeptSetsIdenticalAcrossPlacements) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const KvRule rule = policy::kv_rule("h2o", 0, 2, 3);
  expect_invariant(tiny_config(true), rule, 8, 8, PipelineDevice::Cuda);
}

// H2O on the GPU keeps exactly the tokens the CPU keeps, in every layer, sequence and head.
TEST(GpuPipeline, H2OKeptSetsEqualTheCpus) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const OptModel model(tiny_config(true));
  const ModelWeights w = load_model_weights(model, DType::F32, dummy_weight_producer(3));
  GenerationSettings gen;
  gen.gen_len = 8;
  gen.eviction = policy::kv_rule("h2o", 0, 2, 3);
  gen.capture_kept = true;
  const auto ps = testing_support::prompts(8, 7);
  const GenerateOutput cpu = generate_in_ram(model, w, ps, gen);
  gen.device = Device::CUDA;
  const GenerateOutput gpu = generate_in_ram(model, w, ps, gen);
  EXPECT_EQ(gpu.kept, cpu.kept);
  EXPECT_EQ(gpu.tokens, cpu.tokens);
}

// The LLaMA family (GQA, llama3 rotary scaling, Qwen2 biases) and GPT-NeoX on the GPU.
TEST(GpuHuggingFace, FamiliesF32) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  for (const char* dir : {"llama-gqa", "llama3-rope", "qwen2-bias", "neox-partial"}) {
    check_reference(dir, dir, ops::ComputeType::F32, Device::CUDA, kGpuF32MaxAbs,
                    testing_support::kFamilyFixtures);
  }
}

TEST(GpuPipeline, GroupedQueryH2OAcrossPlacements) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  expect_invariant(testing_support::llama_gqa_model(), policy::kv_rule("h2o", 0, 2, 3), 8, 8,
                   PipelineDevice::Cuda);
  expect_invariant(testing_support::neox_model(), KvRule{}, 5, 4, PipelineDevice::Cuda);
}

// Under GQA too the GPU keeps exactly the CPU's tokens per (layer, sequence, KV head).
TEST(GpuPipeline, GroupedQueryH2OKeptSetsEqualTheCpus) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const LlamaModel model(testing_support::tiny_llama_gqa());
  const ModelWeights w = load_model_weights(model, DType::F32, dummy_weight_producer(3));
  GenerationSettings gen;
  gen.gen_len = 8;
  gen.eviction = policy::kv_rule("h2o", 0, 2, 3);
  gen.capture_kept = true;
  const auto ps = testing_support::prompts(8, 7);
  const GenerateOutput cpu = generate_in_ram(model, w, ps, gen);
  gen.device = Device::CUDA;
  const GenerateOutput gpu = generate_in_ram(model, w, ps, gen);
  EXPECT_EQ(gpu.kept, cpu.kept);
  EXPECT_EQ(gpu.tokens, cpu.tokens);
}

}  // namespace
}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
