// Pipeline stages in the cost model (policy/stage_shape.h, pipeline_cost.h, pipeline_search.h):
// the stages' shapes partition the model, one stage is exactly the single-machine estimate, two
// stages follow the pipeline formulas computed here from per-stage estimate_cost calls, the bytes
// crossing a boundary are a block's hidden states, a slow link paces decode, and the pipeline
// search returns a policy that fits every stage.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <numeric>

#include "models/llama/llama_model.h"
#include "policy/pipeline_search.h"
#include "policy/stage_shape.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

using testing_support::error_of;
using testing_support::make;
using testing_support::opt;
using testing_support::t4;

ModelShape llama_8b() {
  return model_shape_for(LlamaModel(*llama_config_by_name("llama-3-8b")));
}

uint64_t unit_bytes(const ModelFootprint& f, size_t unit) {
  uint64_t b = 0;
  for (size_t i : f.unit_tensors[unit]) b += f.tensor_bytes[i];
  return b;
}

uint64_t all_bytes(const ModelFootprint& f) {
  return std::accumulate(f.tensor_bytes.begin(), f.tensor_bytes.end(), uint64_t{0});
}

TEST(StageShape, StagesPartitionTheLayersAndTensors) {
  for (const ModelShape& m : {opt(24, 2048, 32), llama_8b()}) {
    const size_t units = static_cast<size_t>(m.layers) + 2;
    const std::vector<StageRange> ranges = plan_stages(units, 3);
    int64_t layers = 0;
    uint64_t bytes = 0;
    for (const StageRange& r : ranges) {
      const ModelShape s = stage_model_shape(m, r);
      ASSERT_EQ(s.footprint.unit_tensors.size(), static_cast<size_t>(s.layers) + 2) << m.name;
      EXPECT_EQ(s.footprint.layers, s.layers);
      // Unit 1 is a decoder layer on every stage, with the model's layer bytes.
      EXPECT_EQ(unit_bytes(s.footprint, 1), unit_bytes(m.footprint, 1)) << s.name;
      EXPECT_EQ(s.footprint.unit_tensors.front().empty(), !r.contains(0)) << s.name;
      EXPECT_EQ(s.footprint.unit_tensors.back().empty(), !r.contains(units - 1)) << s.name;
      EXPECT_EQ(s.head_param_count > 0, r.contains(units - 1)) << s.name;
      layers += s.layers;
      bytes += all_bytes(s.footprint);
    }
    EXPECT_EQ(layers, m.layers);
    // Every tensor is on some stage; a tensor the first and the last stage both use (OPT's
    // token table, tied to its head) is on both.
    const ModelFootprint& f = m.footprint;
    uint64_t shared = 0;
    for (size_t i : f.unit_tensors.front()) {
      const auto& head = f.unit_tensors.back();
      if (std::find(head.begin(), head.end(), i) != head.end()) shared += f.tensor_bytes[i];
    }
    EXPECT_EQ(bytes, all_bytes(f) + shared) << m.name;
  }
}

TEST(StageShape, RangesOutsideTheModelOrWithoutALayerAreRefused) {
  const ModelShape m = opt(4, 256, 4);
  EXPECT_NE(error_of([&] { stage_model_shape(m, {0, 9}); }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([&] {
              stage_model_shape(m, {5, 6});
            }).find("no decoder layer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              estimate_pipeline(m, std::vector<HardwareProfile>(5, t4()),
                                make(4, 1, 100, 0, 100, 0, 100, 0, false), {64, 8, {}});
            }).find("only 4 decoder layers"),
            std::string::npos);
}

TEST(PipelineCost, OneStageIsTheSingleMachineEstimate) {
  const ModelShape m = opt(48, 7168, 56);  // OPT-30B
  const Policy p = make(32, 8, 20, 80, 0, 100, 0, 100, true);
  const Workload w{512, 32, {}};
  const CostEstimate one = estimate_cost(m, t4(), p, w);
  const PipelineEstimate e = estimate_pipeline(m, {t4()}, p, w);
  ASSERT_EQ(e.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(e.total_tok_s, one.total_tok_s);
  EXPECT_DOUBLE_EQ(e.prefill_s, one.prefill_s);
  EXPECT_DOUBLE_EQ(e.decode_s, one.decode_s);
  EXPECT_NEAR(e.bubble, 0, 1e-12);
  EXPECT_EQ(e.ids_bytes_decode_step, 0);
  EXPECT_EQ(e.stages[0].send_bytes_decode_step, 0);
}

TEST(PipelineCost, TwoStagesFollowThePipelineFormulas) {
  const ModelShape m = opt(48, 7168, 56);
  const Policy p = make(32, 8, 40, 60, 0, 100, 0, 100, true);
  const Workload w{512, 32, {}};
  HardwareProfile hw = t4();
  hw.stage_link_bdw = 2e9;
  hw.stage_link_latency_s = 1e-4;
  const PipelineEstimate e = estimate_pipeline(m, {hw, hw}, p, w);
  ASSERT_EQ(e.stages.size(), 2u);

  // Per stage, straight from estimate_cost on its half of the model.
  const std::vector<StageRange> r = plan_stages(50, 2);
  const CostEstimate c0 = estimate_cost(stage_model_shape(m, r[0]), hw, p, w);
  const CostEstimate c1 = estimate_cost(stage_model_shape(m, r[1]), hw, p, w);
  const double bls = p.block_size(), n = w.gen_len;
  const double hidden_bytes = bls * 7168 * m.act_bytes;
  const double hop_p = 1e-4 + hidden_bytes * w.prompt_len / 2e9;
  const double hop_g = 1e-4 + hidden_bytes / 2e9, back = 1e-4 + 4 * bls / 2e9;
  const double g0 = c0.decode_s / (n - 1), g1 = c1.decode_s / (n - 1);
  const double t_p = c0.prefill_s + hop_p + c1.prefill_s +
                     std::max({c0.prefill_s, c1.prefill_s, hop_p});  // 2 blocks in flight
  const double t_g = (n - 1) * std::max(2 * std::max({g0, g1, hop_g}), g0 + hop_g + g1 + back);
  EXPECT_NEAR(e.prefill_s, t_p, 1e-9 * t_p);
  EXPECT_NEAR(e.decode_s, t_g, 1e-9 * t_g);
  EXPECT_NEAR(e.total_tok_s, 2 * bls * n / (t_p + t_g), 1e-9 * e.total_tok_s);
  const double busy = 2 * (c0.total_s + c1.total_s);
  EXPECT_NEAR(e.bubble, 1 - busy / (2 * (t_p + t_g)), 1e-12);
  EXPECT_GT(e.bubble, 0);

  // The bytes crossing the boundary: one block's hidden states forward, its token ids back.
  EXPECT_DOUBLE_EQ(e.stages[0].send_bytes_decode_step, hidden_bytes);
  EXPECT_DOUBLE_EQ(e.stages[0].send_bytes_prefill, hidden_bytes * w.prompt_len);
  EXPECT_EQ(e.stages[1].send_bytes_decode_step, 0);
  EXPECT_DOUBLE_EQ(e.ids_bytes_decode_step, 4 * bls);

  // Each stage holds about half of the weights: less memory than the one machine.
  const CostEstimate whole = estimate_cost(m, hw, p, w);
  for (const StageEstimate& s : e.stages) {
    EXPECT_LT(s.cost.peak.host + s.cost.peak.device, 0.6 * (whole.peak.host + whole.peak.device));
  }
}

TEST(PipelineCost, ASlowLinkPacesDecode) {
  const ModelShape m = opt(24, 2048, 32);
  const Policy p = make(16, 2, 100, 0, 100, 0, 100, 0, false);
  const Workload w{128, 16, {}};
  HardwareProfile fast = t4(), slow = t4();
  fast.stage_link_bdw = 1e12;
  fast.stage_link_latency_s = 0;
  slow.stage_link_bdw = 1e4;  // 10 kB/s
  const PipelineEstimate f = estimate_pipeline(m, {fast, fast}, p, w);
  const PipelineEstimate s = estimate_pipeline(m, {slow, slow}, p, w);
  EXPECT_EQ(f.decode_bottleneck.rfind("stage ", 0), 0u) << f.decode_bottleneck;
  EXPECT_EQ(s.decode_bottleneck, "link 0");
  EXPECT_LT(s.total_tok_s, 0.5 * f.total_tok_s);
}

TEST(PipelineSearch, ThePolicyFitsEveryStageAndBeatsOneMachineOnOpt30b) {
  const ModelShape m = opt(48, 7168, 56);
  const Workload w{512, 32, {}};
  const PipelineSearchResult r = search_pipeline_policy(m, {t4(), t4()}, w);
  ASSERT_TRUE(r.found) << r.why_not;
  EXPECT_TRUE(r.estimate.fits());
  ASSERT_EQ(r.estimate.stages.size(), 2u);
  for (const StageEstimate& s : r.estimate.stages) {
    EXPECT_TRUE(fits_within(s.cost.peak, s.capacity)) << s.memory_problem;
  }
  // Two machines, each with half of the weights, do more than one machine alone.
  const SearchResult one = search_policy(m, t4(), w);
  ASSERT_TRUE(one.found);
  EXPECT_GT(r.estimate.total_tok_s, one.estimate.total_tok_s);
}

TEST(HardwareProfileLink, DefaultsAndGivenValues) {
  const HardwareProfile hw = t4();
  EXPECT_DOUBLE_EQ(hw.stage_link_rate(), 1.25e9);
  EXPECT_DOUBLE_EQ(hw.stage_link_latency_s, 50e-6);
  YAML::Node node = YAML::Load(hardware_profile_to_yaml(hw));
  node["stage_link_bdw"] = 2;  // GiB/s
  node["stage_link_latency_s"] = 0.001;
  const HardwareProfile given = parse_hardware_profile(node, "test");
  EXPECT_DOUBLE_EQ(given.stage_link_rate(), 2.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(given.stage_link_latency_s, 0.001);
  const HardwareProfile again =
      parse_hardware_profile(YAML::Load(hardware_profile_to_yaml(given)), "again");
  EXPECT_DOUBLE_EQ(again.stage_link_rate(), given.stage_link_rate());
  node["stage_link_latency_s"] = -1;
  EXPECT_NE(error_of([&] { parse_hardware_profile(node, "test"); }).find("stage_link_latency_s"),
            std::string::npos);
  node["stage_link_latency_s"] = 0;
  node["stage_link_bdw"] = 0;
  EXPECT_NE(error_of([&] { parse_hardware_profile(node, "test"); }).find("stage_link_bdw"),
            std::string::npos);
}

}  // namespace
}  // namespace h2oflex::policy
