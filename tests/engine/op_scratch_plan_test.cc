// The memory plan covers the ops' working buffers where the CPU computes: a run's scratch
// (ops/scratch.h), measured from nothing, stays within the plan's op_scratch_bytes for every
// decoder family and compute type, and the device tier's peak includes the charge, so device_mem
// bounds what the process holds beside the host tier.
#include <gtest/gtest.h>

#include "engine/pipeline.h"
#include "policy/kv_policy.h"
#include "runtime/core/cpu_memory_reserve.h"
#include "runtime/ops/compute_choice.h"
#include "runtime/ops/scratch.h"
#include "tests/support/family_models.h"
#include "tests/support/pipeline_invariance.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

using testing_support::prompts;

class OpScratchPlan : public testing_support::ScratchDirTest {
 protected:
  void expect_covered(std::shared_ptr<const DecoderModel> model, ops::ComputeType ct,
                      const KvRule& rule) {
    PipelineSpec spec;
    spec.model = model;
    spec.producer = dummy_weight_producer(3);
    spec.weights_key = model->name() + ":dummy:seed=3";
    spec.policy.gpu_batch_size = 3;
    spec.policy.num_gpu_batches = 2;
    spec.policy.w_gpu = 0, spec.policy.w_cpu = 100;
    spec.policy.cache_gpu = 0, spec.policy.cache_cpu = 100;
    spec.policy.act_gpu = 100, spec.policy.act_cpu = 0;
    spec.limits.disk_path = dir().string();
    spec.gen.gen_len = 4;
    spec.gen.compute = ct;
    spec.gen.eviction = rule;
    spec.gen.kv_dtype = ops::operand_dtype(ct);
    spec.prompts = prompts(6, 11);
    const policy::MemoryPlan plan = plan_pipeline(spec);
    const uint64_t planned = plan.op_scratch_bytes - cpu_reserve::kGemmScratchBytes;

    ops::release_scratch(Device::CPU);
    const PipelineResult r = run_pipeline(spec);
    const uint64_t held = ops::scratch_bytes_held(Device::CPU);
    const std::string what = model->name() + " " + std::string(ops::compute_type_name(ct)) +
                             (rule.uses_attention_scores() ? " h2o" : " full");
    EXPECT_LE(held, planned) << what;
    // The plan is not padded far beyond what the ops take.
    EXPECT_GE(static_cast<double>(held), 0.5 * static_cast<double>(planned)) << what;
    EXPECT_GE(r.peak_bytes.at("device"), plan.op_scratch_bytes) << what;
    EXPECT_EQ(r.peak_bytes.at("device"), plan.bytes[static_cast<int>(TierKind::Device)]) << what;
  }
};

TEST_F(OpScratchPlan, CoversTheOpsBuffersOfEveryFamily) {
  for (const KvRule& rule : {KvRule{}, policy::kv_rule("h2o", 0, 2, 3)}) {
    for (auto ct : {ops::ComputeType::F32, ops::ComputeType::BF16}) {
      expect_covered(std::make_shared<const OptModel>(testing_support::tiny_config(true)), ct,
                     rule);
      expect_covered(std::make_shared<const OptModel>(testing_support::tiny_config(false)), ct,
                     rule);
      expect_covered(testing_support::llama_gqa_model(), ct, rule);
      expect_covered(testing_support::neox_model(), ct, rule);
    }
  }
}

}  // namespace
}  // namespace h2oflex
