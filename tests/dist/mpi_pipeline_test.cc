// The block-schedule pipeline split into stages, one per MPI rank (dist_mpi_pipeline_np2, _np3):
// every rank generates the tokens of the single-process in-RAM path, and each stage keeps the
// same KV positions in its layers, for OPT and a LLaMA model with grouped-query attention, with
// the full cache and with H2O, whether a stage's weights and KV cache are in RAM or on disk. The
// stages' placements differ on purpose (each process runs its own spec): stage r's weights and
// KV go to disk when r is odd.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <random>
#include <string>

#include "engine/generator.h"
#include "engine/pipeline.h"
#include "engine/pipeline_stage.h"
#include "models/opt/opt_model.h"
#include "policy/kv_policy.h"
#include "runtime/dist/mpi_transport.h"
#include "tests/support/family_models.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

MpiTransport* g_world = nullptr;
std::filesystem::path g_disk_dir;  // the shared directory once made, removed at exit

// One directory for all ranks (rank 0's pid), so the stages share one weight layout as they do
// on one machine.
std::string shared_disk_dir() {
  int64_t pid = ::getpid();
  g_world->broadcast(&pid, sizeof(pid), 0);
  const auto dir =
      std::filesystem::temp_directory_path() / ("h2oflex-stages-" + std::to_string(pid));
  std::filesystem::create_directories(dir);
  g_disk_dir = dir;
  return dir.string();
}

// micro_blocks: the policy's (0: as many as the stages can use).
void expect_stages_match_one_process(std::shared_ptr<const DecoderModel> model, const KvRule& rule,
                                     bool this_stage_on_disk, int micro_blocks = 0) {
  const int block = 4;
  const auto prompts = testing_support::prompts(block, 5);
  GenerationSettings gen;
  gen.gen_len = 6;
  gen.eviction = rule;
  gen.capture_kept = true;
  const ModelWeights w = load_model_weights(*model, DType::F32, dummy_weight_producer(3));
  const GenerateOutput ref = generate_in_ram(*model, w, prompts, gen);

  PipelineSpec spec;
  spec.model = model;
  spec.producer = dummy_weight_producer(3);
  spec.weights_key = model->name() + ":dummy:seed=3";
  spec.policy.gpu_batch_size = 2;
  spec.policy.num_gpu_batches = 2;
  spec.policy.micro_blocks = micro_blocks;
  const double ram = this_stage_on_disk ? 0 : 100;
  spec.policy.w_gpu = 0, spec.policy.w_cpu = ram;
  spec.policy.cache_gpu = 0, spec.policy.cache_cpu = ram;
  spec.policy.act_gpu = 100, spec.policy.act_cpu = 0;
  spec.limits.disk_path = shared_disk_dir();
  spec.gen = gen;
  spec.prompts = prompts;
  spec.transport = g_world;
  const PipelineResult r = run_pipeline(spec);

  EXPECT_EQ(r.tokens, ref.tokens) << model->name() << " rank " << g_world->rank();
  // Two GPU batches: two micro-blocks in flight unless the policy asks for one.
  EXPECT_EQ(r.micro_blocks, micro_blocks > 0 ? micro_blocks : 2);
  // This stage's layers keep what the same layers keep in one process.
  const PipelineStage stage = pipeline_stage(*model, DType::F32, g_world);
  ASSERT_EQ(r.kept.size(), static_cast<size_t>(stage.layers()));
  for (int64_t l = 0; l < stage.layers(); ++l) {
    const int model_layer = stage.part.model_unit[static_cast<size_t>(l + 1)] - 1;
    EXPECT_EQ(r.kept[static_cast<size_t>(l)], ref.kept[static_cast<size_t>(model_layer)])
        << model->name() << " rank " << g_world->rank() << " layer " << model_layer;
  }
  // A stage on disk read its own weights from there in decode, and only its own: once per
  // micro-block and step.
  uint64_t disk_reads = 0;
  for (const auto& m : r.bytes_moved) {
    if (m.kind == DataKind::Weight && m.src == TierKind::Disk && m.phase == "decode") {
      disk_reads += m.bytes;
    }
  }
  uint64_t per_step = 0;  // every unit's weights once
  for (const auto& unit : stage.part.footprint.unit_tensors) {
    for (size_t i : unit) per_step += stage.part.footprint.tensor_bytes[i];
  }
  if (this_stage_on_disk) {
    EXPECT_GT(disk_reads, 0u);
    EXPECT_LE(disk_reads, static_cast<uint64_t>(gen.gen_len - 1) * r.micro_blocks * per_step);
  } else {
    EXPECT_EQ(disk_reads, 0u);
  }
  g_world->barrier();  // the next case starts together
}

const KvRule kFull{};
const KvRule kH2o = policy::kv_rule("h2o", 0, 2, 3);

TEST(MpiPipeline, OptStagesMatchOneProcess) {
  const bool odd = g_world->rank() % 2 == 1;
  auto opt = std::make_shared<const OptModel>(testing_support::tiny_config(false));
  expect_stages_match_one_process(opt, kFull, odd);
  expect_stages_match_one_process(opt, kH2o, odd);
  auto preln = std::make_shared<const OptModel>(testing_support::tiny_config(true));
  expect_stages_match_one_process(preln, kH2o, !odd, /*micro_blocks=*/1);
}

TEST(MpiPipeline, LlamaGqaStagesMatchOneProcess) {
  const bool odd = g_world->rank() % 2 == 1;
  expect_stages_match_one_process(testing_support::llama_gqa_model(), kFull, odd);
  expect_stages_match_one_process(testing_support::llama_gqa_model(), kH2o, !odd, 1);
}

class FailureEndsJob : public ::testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      g_world->abort_all(std::string("test ") + info.test_suite_name() + "." + info.name() +
                         " failed");
    }
  }
};

}  // namespace
}  // namespace h2oflex

int main(int argc, char** argv) {
  h2oflex::MpiSession session(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  h2oflex::MpiTransport world(session);
  h2oflex::g_world = &world;
  if (world.rank() != 0) GTEST_FLAG_SET(brief, true);
  testing::UnitTest::GetInstance()->listeners().Append(new h2oflex::FailureEndsJob);
  const int rc = RUN_ALL_TESTS();
  // Every rank is done with the shared layout before rank 0 removes it.
  world.barrier();
  if (world.rank() == 0 && !h2oflex::g_disk_dir.empty()) {
    std::filesystem::remove_all(h2oflex::g_disk_dir);
  }
  return rc;
}
