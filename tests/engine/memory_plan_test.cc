// The planner and the engine agree on memory because they ask the same function: for random
// policies, the cost model's estimate (what `plan` and `policy: auto` check) equals the plan the
// pipeline allocates by, tier by tier; and a run never holds more than its plan.
#include <gtest/gtest.h>

#include <random>

#include "experiments/plan/plan_command.h"
#include "policy/cost_model.h"
#include "tests/support/pipeline_invariance.h"

namespace h2oflex {
namespace {

using testing_support::prompts;
using testing_support::random_policy;
using testing_support::tiny_config;

PipelineSpec spec_for(const OptConfig& cfg, const policy::Policy& p, const policy::KvPolicy& kv,
                      PipelineDevice device, int gen_len) {
  PipelineSpec spec;
  spec.device = device;
  spec.model = std::make_shared<const OptModel>(cfg);
  spec.producer = dummy_weight_producer(3);
  spec.weights_key = cfg.name + ":dummy:seed=3";
  spec.policy = p;
  spec.limits.disk_path = testing_support::temp_dir();
  spec.gen.gen_len = gen_len;
  spec.prompts = std::vector<std::vector<int32_t>>(static_cast<size_t>(p.block_size()),
                                                   std::vector<int32_t>(12, 7));
  spec.gen.eviction = kv.resolve(12, gen_len);
  return spec;
}

TEST(MemoryPlan, CostModelEstimateIsTheEnginesPlanForRandomPolicies) {
  std::mt19937 rng(5);
  const OptConfig cfg = tiny_config(true);
  const policy::ModelShape shape =
      model_shape_for(OptModel(cfg), /*weight_bytes=*/4, /*act_bytes=*/4);
  const char* kvs[] = {"full", "h2o:0.25,0.25", "streaming:2,4"};
  for (int i = 0; i < 24; ++i) {
    const policy::Policy p = random_policy(rng, 8);
    const policy::KvPolicy kv = policy::parse_kv_spec(kvs[i % 3]);
    // The cost model's separate device is a GPU: its plan is the Cuda pipeline's (planning
    // allocates nothing, so this runs without one).
    const PipelineDevice device = i % 2 ? PipelineDevice::Cuda : PipelineDevice::Cpu;
    const policy::MemoryPlan plan = plan_pipeline(spec_for(cfg, p, kv, device, 6));
    const policy::Workload w{12, 6, kv};
    const policy::MemoryEstimate est =
        policy::estimate_memory(shape, p, w, device != PipelineDevice::Cpu);
    EXPECT_EQ(est.peak.device, static_cast<double>(plan.on(TierKind::Device))) << p.summary();
    EXPECT_EQ(est.peak.host, static_cast<double>(plan.on(TierKind::Host))) << p.summary();
    EXPECT_EQ(est.peak.disk, static_cast<double>(plan.on(TierKind::Disk))) << p.summary();
    EXPECT_GT(plan.on(TierKind::Device) + plan.on(TierKind::Host) + plan.on(TierKind::Disk), 0u);
  }
}

TEST(MemoryPlan, ARunHoldsNoMoreThanItsPlan) {
  std::mt19937 rng(9);
  const OptConfig cfg = tiny_config(true);
  for (int i = 0; i < 6; ++i) {
    const policy::Policy p = random_policy(rng, 8);
    const PipelineSpec spec = spec_for(
        cfg, p, policy::parse_kv_spec(i % 2 ? "h2o:0.25,0.25" : "full"), PipelineDevice::Cpu, 4);
    const PipelineResult r = run_pipeline(spec);
    for (const char* tier : {"device", "host", "disk"}) {
      EXPECT_LE(r.peak_bytes.at(tier), r.planned_bytes.at(tier)) << tier << " " << p.summary();
    }
    // The plan is not a loose bound either: the homes dominate and are all allocated.
    EXPECT_GE(
        r.peak_bytes.at("host") + r.peak_bytes.at("device") + r.peak_bytes.at("disk"),
        (r.planned_bytes.at("host") + r.planned_bytes.at("device") + r.planned_bytes.at("disk")) *
            9 / 10)
        << p.summary();
    // Where the time went: every unit kind took time in each phase, the units' walls are
    // disjoint parts of the phase's wall time, and a unit's compute is part of its wall.
    for (const auto& [phase, latency] :
         {std::pair{"prefill", r.prefill_s}, {"decode", r.decode_s}}) {
      const ByUnitKind& w = r.unit_wall_s.at(phase);
      const ByUnitKind& c = r.unit_compute_s.at(phase);
      EXPECT_GT(c.embedding, 0) << phase;
      EXPECT_GT(c.layers, 0) << phase;
      EXPECT_GT(c.head, 0) << phase;
      EXPECT_LE(c.embedding, w.embedding) << phase;
      EXPECT_LE(c.layers, w.layers) << phase;
      EXPECT_LE(c.head, w.head) << phase;
      EXPECT_LE(w.embedding + w.layers + w.head, latency) << phase;
    }
  }
}

}  // namespace
}  // namespace h2oflex
