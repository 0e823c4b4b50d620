// engine::run(request): the path it chooses, a short block on the pipeline (filled up and the
// extra results dropped), and the sizes its Result carries, each against an independent oracle
// (the in-RAM generator called directly; the tensors' and the cache's element counts).
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/request.h"
#include "runtime/core/error.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

using testing_support::prompts;
using testing_support::temp_dir;
using testing_support::tiny_config;

class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

engine::Request tiny_request(int n) {
  engine::Request r;
  auto model = std::make_shared<OptModel>(tiny_config(true));
  r.model.model = model;
  r.model.producer = dummy_weight_producer(3);
  r.model.weights_key = model->name() + ":dummy:seed=3";
  r.gen.gen_len = 4;
  r.gen.stop_at_eos = false;
  r.gen.compute = ops::ComputeType::F32;
  r.gen.kv_dtype = DType::F32;
  r.limits.disk_path = temp_dir();
  r.prompts = prompts(n, 11);
  r.subject = "test request";
  return r;
}

policy::Policy all_on_host(int gpu_batch_size, int num_gpu_batches) {
  policy::Policy p;
  p.gpu_batch_size = gpu_batch_size;
  p.num_gpu_batches = num_gpu_batches;
  p.w_gpu = p.cache_gpu = p.act_gpu = 0;
  p.w_cpu = p.cache_cpu = p.act_cpu = 100;
  return p;
}

TEST(EngineRequest, ChoosesThePipelineForAPolicyOrAGpuWithoutResidentWeights) {
  engine::Request r = tiny_request(2);
  EXPECT_EQ(engine::choose_path(r), engine::Path::InRam);
  r.device = PipelineDevice::Cuda;
  EXPECT_EQ(engine::choose_path(r), engine::Path::Pipeline);
  const ModelWeights weights;
  r.resident_weights = &weights;
  EXPECT_EQ(engine::choose_path(r), engine::Path::InRam);
  r.policy = all_on_host(2, 1);
  EXPECT_EQ(engine::choose_path(r), engine::Path::Pipeline);
}

TEST(EngineRequest, GpuWithoutPolicyPlansEverythingOnTheDeviceInOneBatch) {
  engine::Request r = tiny_request(3);
  const policy::Policy p = engine::pipeline_policy(r);
  EXPECT_EQ(p.gpu_batch_size, 3);
  EXPECT_EQ(p.num_gpu_batches, 1);
  EXPECT_EQ(p.w_gpu, 100);
  EXPECT_EQ(p.cache_gpu, 100);
  EXPECT_EQ(p.act_gpu, 100);
}

// Three prompts for a block of four: the engine fills the block with a copy of the last prompt
// and returns three results, those the in-RAM generator gives for the three.
TEST(EngineRequest, AShortBlockOnThePipelineGivesTheInRamTokensOfItsPrompts) {
  engine::Request r = tiny_request(3);
  r.policy = all_on_host(2, 2);
  const engine::Result got = engine::run(r);
  EXPECT_EQ(got.path, engine::Path::Pipeline);
  const ModelWeights w = load_model_weights(*r.model.model, DType::F32, dummy_weight_producer(3));
  const GenerateOutput want = generate_in_ram(*r.model.model, w, r.prompts, r.gen);
  ASSERT_EQ(got.run.tokens.size(), 3u);
  EXPECT_EQ(got.run.tokens, want.tokens);
  EXPECT_EQ(got.policy.block_size(), 4);
  EXPECT_FALSE(got.run.bytes_moved.empty());
}

TEST(EngineRequest, MorePromptsThanTheBlockAreRefusedNamingTheSubject) {
  engine::Request r = tiny_request(5);
  r.policy = all_on_host(2, 2);
  try {
    engine::run(r);
    FAIL() << "5 prompts ran in a block of 4";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("test request: 5 prompts for a block of 4"),
              std::string::npos)
        << e.what();
  }
}

// In f32 every tensor is stored as 4-byte values; the full cache keeps prompt + gen_len slots
// of K and V per (sequence, layer, head).
TEST(EngineRequest, ResultCarriesTheRunsSizes) {
  const engine::Request r = tiny_request(3);
  const engine::Result got = engine::run(r);
  EXPECT_EQ(got.path, engine::Path::InRam);
  double weights = 0;
  for (const WeightSpec& s : r.model.model->weight_specs()) {
    weights += 4.0 * static_cast<double>(shape_numel(s.shape));
  }
  size_t longest = 0;
  for (const auto& p : r.prompts) longest = std::max(longest, p.size());
  const OptConfig c = tiny_config(true);
  const double cache = 2.0 * 3 * static_cast<double>(longest + 4) * c.layers * c.hidden * 4.0;
  EXPECT_DOUBLE_EQ(got.model_bytes, weights);
  EXPECT_DOUBLE_EQ(got.cache_bytes, cache);
  EXPECT_DOUBLE_EQ(got.hidden_bytes, 3.0 * static_cast<double>(longest) * c.hidden * 4.0);
  EXPECT_DOUBLE_EQ(got.peak_device_bytes, weights + cache);
  EXPECT_EQ(got.run.tokens.size(), 3u);
}

// A stop asked after the second decode step: both paths end there, each sequence holding the
// first three tokens of the full run (the prefill's and two decode steps').
TEST(EngineRequest, AStopBetweenDecodeStepsEndsTheRunThere) {
  for (const bool pipeline : {false, true}) {
    engine::Request r = tiny_request(4);
    r.gen.gen_len = 6;
    if (pipeline) r.policy = all_on_host(2, 2);
    const engine::Result full = engine::run(r);
    ASSERT_FALSE(full.stopped);
    int asked = 0;
    engine::Observer stop_after_two;
    stop_after_two.stop_requested = [&asked] { return ++asked > 2; };
    const engine::Result cut = engine::run(r, stop_after_two);
    EXPECT_TRUE(cut.stopped) << (pipeline ? "pipeline" : "in RAM");
    ASSERT_EQ(cut.run.tokens.size(), full.run.tokens.size());
    for (size_t i = 0; i < full.run.tokens.size(); ++i) {
      ASSERT_EQ(full.run.tokens[i].size(), 6u);
      const std::vector<int32_t> head(full.run.tokens[i].begin(), full.run.tokens[i].begin() + 3);
      EXPECT_EQ(cut.run.tokens[i], head) << (pipeline ? "pipeline" : "in RAM") << " row " << i;
    }
  }
}

}  // namespace
}  // namespace h2oflex
