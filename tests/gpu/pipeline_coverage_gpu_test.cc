// The GPU paths a lent GPU's first run must cover beyond pipeline_gpu_test.cc: the 4-bit KV
// cache (decode on compressed rows, slot stores of changed rows) through the pipeline, the
// eviction rules other than full and H2O, a tiered pipeline computing in bf16, sampling, and
// one `generate` job — each against its twin (the in-RAM path on the same GPU, or the CPU).
#include <gtest/gtest.h>

#include "gpu_test_support.h"

#ifdef H2OFLEX_WITH_CUDA

#include <map>
#include <random>
#include <string>

#include "experiments/generate/generate_command.h"
#include "tests/generate/generate_test_support.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

using testing_support::expect_invariant;
using testing_support::tiny_config;

// 4-bit KV rows on the GPU: compressed after projection, attended to compressed, H2O's
// eviction and the write-back of changed rows on compressed rows — the in-RAM path's tokens and
// kept sets (on the same GPU) in every placement, alone and with 4-bit weights.
TEST(GpuPipelineCoverage, CompressedCacheAcrossPlacements) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  const KvRule h2o = policy::kv_rule("h2o", 0, 2, 3);
  expect_invariant(tiny_config(true), KvRule{}, 6, 4, PipelineDevice::Cuda, {}, false, true);
  expect_invariant(tiny_config(true), h2o, 8, 6, PipelineDevice::Cuda, {}, false, true);
  expect_invariant(tiny_config(false), h2o, 8, 4, PipelineDevice::Cuda, {}, true, true);
}

// Position scores (StreamingLLM's sinks and window), replaced attention scores (TOVA) and a
// fixed draw (random) through the pipeline on the GPU.
TEST(GpuPipelineCoverage, OtherEvictionRulesAcrossPlacements) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  expect_invariant(tiny_config(true), policy::kv_rule("streaming", 2, 0, 3), 8, 4,
                   PipelineDevice::Cuda);
  expect_invariant(tiny_config(true), policy::kv_rule("tova", 0, 2, 3), 8, 4, PipelineDevice::Cuda);
  expect_invariant(tiny_config(true), policy::kv_rule("random", 0, 2, 3), 8, 4,
                   PipelineDevice::Cuda);
}

// Runs `policies` random placements of the tiny model on the GPU with `gen` (attention on the
// GPU: the host's bf16 attention rounds differently) and expects the in-RAM path's tokens on
// the same GPU from each.
void expect_gpu_placements_match_in_ram(const GenerationSettings& gen, DType weights,
                                        int policies) {
  auto model = std::make_shared<const OptModel>(tiny_config(true));
  const auto ps = testing_support::prompts(8, 7);
  const ModelWeights w = load_model_weights(*model, weights, dummy_weight_producer(3));
  GenerationSettings ref_gen = gen;
  ref_gen.device = Device::CUDA;
  const GenerateOutput ref = generate_in_ram(*model, w, ps, ref_gen);
  ASSERT_EQ(ref.tokens.size(), ps.size());
  std::mt19937 rng(13);
  for (int i = 0; i < policies; ++i) {
    PipelineSpec spec;
    spec.device = PipelineDevice::Cuda;
    spec.model = model;
    spec.producer = dummy_weight_producer(3);
    spec.weights_key = model->name() + ":dummy:seed=3";
    spec.policy = testing_support::random_policy(rng, 8);
    spec.policy.cpu_cache_compute = false;
    spec.limits.disk_path = testing_support::temp_dir();
    spec.gen = gen;
    spec.prompts = ps;
    const PipelineResult r = run_pipeline(spec);
    EXPECT_EQ(r.tokens, ref.tokens) << spec.policy.summary();
  }
}

// The compute type of the GPU check and of the T4 suites: weights, KV and activations placed
// on the device, the host and the disk, staged to the GPU, computed in bf16.
TEST(GpuPipelineCoverage, Bf16TieredPipelineMatchesTheInRamPath) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  GenerationSettings gen;
  gen.gen_len = 6;
  gen.compute = ops::ComputeType::BF16;
  gen.kv_dtype = DType::BF16;
  expect_gpu_placements_match_in_ram(gen, DType::BF16, 4);
}

// Sampling (temperature and top-p, counter-based draws) through the tiered pipeline.
TEST(GpuPipelineCoverage, SamplingMatchesTheInRamPath) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  GenerationSettings gen;
  gen.gen_len = 8;
  gen.temperature = 0.8f;
  gen.top_p = 0.9f;
  gen.seed = 5;
  expect_gpu_placements_match_in_ram(gen, DType::F32, 4);
}

// One `generate` job on the GPU (f32, a tiered policy, H2O) writes the results the same job
// writes on the CPU.
class GpuGenerateJob : public testing_support::ScratchDirTest {};

TEST_F(GpuGenerateJob, WritesTheCpusResults) {
  H2OFLEX_REQUIRE_CUDA_DEVICE();
  std::string input;
  for (int i = 0; i < 6; ++i) {
    std::string prompt = "tell me";
    for (int w = 0; w < i * 3; ++w) prompt += " more";
    input += nlohmann::json{{"id", "x" + std::to_string(i)}, {"prompt", prompt}}.dump() + "\n";
  }
  testing::write_text(dir() / "in.jsonl", input);
  testing::write_text(dir() / "run.yaml",
                      "policy:\n"
                      "  gpu_batch_size: 3\n"
                      "  num_gpu_batches: 2\n"
                      "  weights: {gpu: 50, cpu: 50}\n"
                      "  cache: {gpu: 0, cpu: 100}\n"
                      "  activations: {gpu: 100, cpu: 0}\n");
  std::map<std::string, std::map<std::string, nlohmann::json>> by_device;
  for (const std::string device : {"cpu", "cuda"}) {
    GenerateJobOptions o;
    o.model_dir = testing::demo_model_dir().string();
    o.input = (dir() / "in.jsonl").string();
    o.output = (dir() / (device + ".jsonl")).string();
    o.config_path = (dir() / "run.yaml").string();
    o.overrides = {"gen_len=6", "compute_dtype=f32", "compute_device=" + device,
                   "kv={policy: h2o, heavy_ratio: 0.3, recent_ratio: 0.3}"};
    ASSERT_EQ(run_generate(o), 0) << device;
    for (const nlohmann::json& j : testing::read_jsonl(dir() / (device + ".jsonl"))) {
      by_device[device][j.at("id")] = j;
    }
  }
  EXPECT_EQ(by_device["cpu"].size(), 6u);
  EXPECT_EQ(by_device["cuda"], by_device["cpu"]);
}

}  // namespace
}  // namespace h2oflex

#endif  // H2OFLEX_WITH_CUDA
