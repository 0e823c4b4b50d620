// The cost model against independent oracles: hand-derived byte counts and link times, the
// published FlexGen / H2O throughputs on a T4, and memory arithmetic.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>

#include "policy/cost_model.h"
#include "policy/hardware.h"
#include "policy/memory_plan.h"
#include "runtime/core/error.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

constexpr double kGiB = 1073741824.0;

using testing_support::make;
using testing_support::opt;
using testing_support::t4;

TEST(HardwareProfile, T4HasFlexGensConstants) {
  const HardwareProfile hw = t4();
  EXPECT_EQ(hw.compute_device, ComputeDevice::Gpu);
  EXPECT_DOUBLE_EQ(hw.ctog_bdw, 12.89 * kGiB);
  EXPECT_DOUBLE_EQ(hw.gtoc_bdw_cache, 0.97 * kGiB);
  EXPECT_DOUBLE_EQ(hw.mm_flops_g, 4.3e12);
  EXPECT_DOUBLE_EQ(hw.bmm_flops_g, 0.079e12);
  EXPECT_DOUBLE_EQ(hw.cpu_flops, 0.0123e12);
  EXPECT_EQ(hw.device_mem, 16ull << 30);
  EXPECT_EQ(hw.host_mem, 208ull << 30);
  EXPECT_EQ(hw.disk_mem, 1536ull << 30);
  // FlexGen's fitted shape: gbs 32, h1 12288 -> a = 1, b = 0 -> factor 1 - c2.
  EXPECT_NEAR(hw.cpu_flops_real(32, 12288), 0.0123e12 * (1 - 0.0328), 1e3);
}

TEST(HardwareProfile, RoundTripsAndRejectsUnknownKeys) {
  const HardwareProfile hw = t4();
  const HardwareProfile back =
      parse_hardware_profile(YAML::Load(hardware_profile_to_yaml(hw)), "x");
  EXPECT_NEAR(back.dtoc_bdw, hw.dtoc_bdw, 1e-6 * hw.dtoc_bdw);
  EXPECT_EQ(back.host_mem, hw.host_mem);
  YAML::Node n = YAML::Load(hardware_profile_to_yaml(hw));
  n["nvlink_bdw"] = 300;
  try {
    parse_hardware_profile(n, "my.yaml");
    FAIL() << "accepted an unknown key";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nvlink_bdw: unknown key"), std::string::npos);
  }
  n.remove("nvlink_bdw");
  n.remove("mm_flops_g");
  try {
    parse_hardware_profile(n, "my.yaml");
    FAIL() << "accepted a missing constant";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("my.yaml: mm_flops_g: missing"), std::string::npos);
  }
}

// Link terms recomputed by hand from FLEXGEN.md's formulas.
TEST(CostModel, DecodeTermsMatchHandComputation) {
  const HardwareProfile hw = t4();
  const ModelShape m = opt(48, 7168, 56);
  const double h = 7168, layer_bytes = 2 * (12 * h * h + 13 * h);  // 4h^2+2h*4h, biases, norms
  Workload w;                                                      // 512 + 32, full cache
  // Weights 50% cpu / 50% disk, cache on disk, hidden on cpu, delegated attention.
  const Policy p = make(16, 4, 0, 50, 0, 0, 0, 100, true);
  const CostEstimate e = estimate_cost(m, hw, p, w);
  const double bls = 64, ctx = 512 + 16;
  EXPECT_NEAR(e.decode.ctog, (layer_bytes + 2 * h * bls + 2 * h * bls) / (12.89 * kGiB),
              1e-9);  // weights + hidden in + attention output back
  const double cache_read = 4 * bls * ctx * h;
  EXPECT_NEAR(e.decode.dtoc, cache_read / (2.59 * kGiB) + 0.5 * layer_bytes / (0.95 * 2.59 * kGiB),
              1e-9);
  EXPECT_NEAR(e.decode.ctod, 4 * bls * h / (2.015 * kGiB), 1e-12);  // the new token's K, V
  EXPECT_EQ(e.decode_kv_tokens, 528);
  // Prefill writes s tokens' K and V per sequence to disk through the host.
  EXPECT_NEAR(e.prefill.ctod, 4 * bls * 512 * h / (0.746 * kGiB), 1e-9);
}

TEST(CostModel, H2OReplacesContextByBudget) {
  const HardwareProfile hw = t4();
  const ModelShape m = opt(48, 7168, 56);
  const Policy p = make(16, 4, 0, 100, 0, 0, 100, 0, true);  // cache on disk
  Workload full;
  full.gen_len = 512;
  Workload h2o = full;
  h2o.kv.policy = "h2o";
  h2o.kv.heavy_ratio = h2o.kv.recent_ratio = 0.1;  // B = 102
  const CostEstimate ef = estimate_cost(m, hw, p, full);
  const CostEstimate eh = estimate_cost(m, hw, p, h2o);
  EXPECT_EQ(ef.decode_kv_tokens, 512 + 256);
  EXPECT_EQ(eh.decode_kv_tokens, 102);
  // dtoc carries only the cache (weights and hidden are not on disk): its ratio is the ratio
  // of tokens read, plus H2O's slot bookkeeping (positions + scores: 8*nh bytes per token read,
  // scores rewritten 4*nh).
  const double h = 7168, nh = 56;
  EXPECT_NEAR(eh.decode.dtoc / ef.decode.dtoc, 102 * (4 * h + 8 * nh + 4 * nh) / (768 * 4 * h),
              1e-9);
  EXPECT_GT(eh.total_tok_s, 3 * ef.total_tok_s);
  // Memory (the engine's plan): B slots per sequence and layer instead of s + n — a new token
  // takes its victim's slot — and the slots' positions and scores live with the attention that
  // reads them (the host, with cpu_cache_compute), not on disk.
  // Each (layer, GPU batch) home on disk also has its log's room (engine/kv_log.h).
  const double bls = 64;
  const double log_full = static_cast<double>(kv_log_bytes(16 * 56, 1024, 256, 511));
  const double log_h2o = static_cast<double>(kv_log_bytes(16 * 56, 102, 256, 511));
  EXPECT_NEAR(ef.peak_decode.disk, 48 * bls * 1024 * 4 * h + 48 * 4 * log_full, 1);
  EXPECT_NEAR(eh.peak_decode.disk, 48 * bls * 102 * 4 * h + 48 * 4 * log_h2o, 1);
  EXPECT_LT(log_full, 0.05 * 16 * 1024 * 4 * h) << "sqrt(2 x 1024) entries of 1024 slots";
  EXPECT_LT(log_h2o, 0.2 * 16 * 102 * 4 * h) << "sqrt(2 x 102) entries of 102 slots";
}

TEST(CostModel, DelegationMovesAttentionToTheHost) {
  const HardwareProfile hw = t4();
  const ModelShape m = opt(48, 7168, 56);
  Workload w;
  const Policy on = make(48, 3, 20, 80, 0, 100, 0, 100, true);
  Policy off = on;
  off.cpu_cache_compute = false;
  const CostEstimate a = estimate_cost(m, hw, on, w), b = estimate_cost(m, hw, off, w);
  // Without delegation the whole host-resident KV crosses PCIe each step.
  const double h = 7168, bls = 144, ctx = 528;
  EXPECT_NEAR(b.decode.ctog - a.decode.ctog, (4 * bls * ctx * h - 2 * h * bls) / (12.89 * kGiB),
              1e-9);
  EXPECT_GT(b.peak_decode.device, a.peak_decode.device);  // KV staging buffers on the device
}

TEST(CostModel, ThroughputDefinitions) {
  const HardwareProfile hw = t4();
  const ModelShape m = opt(32, 4096, 32);
  Workload w;
  const Policy p = make(4, 2, 100, 0, 100, 0, 100, 0, false);
  const CostEstimate e = estimate_cost(m, hw, p, w);
  EXPECT_NEAR(e.prefill_tok_s, 8 * 512 / e.prefill_s, 1e-9);
  EXPECT_NEAR(e.decode_tok_s, 8 * 31 / e.decode_s, 1e-9);
  EXPECT_NEAR(e.total_tok_s, 8 * 32 / (e.prefill_s + e.decode_s), 1e-9);
}

TEST(CostModel, CpuHierarchyDoesNotOverlapMemcpyWithCompute) {
  HardwareProfile hw = t4();
  const ModelShape m = opt(24, 2048, 32);
  Workload w;
  const Policy p = make(8, 1, 0, 100, 100, 0, 100, 0, false);
  const CostEstimate gpu = estimate_cost(m, hw, p, w);
  hw.compute_device = ComputeDevice::Cpu;
  const CostEstimate cpu = estimate_cost(m, hw, p, w);
  EXPECT_NEAR(gpu.decode.per_layer,
              gpu.decode.ctog +
                  std::max({gpu.decode.gtoc, gpu.decode.dtoc, gpu.decode.ctod, gpu.decode.comp}),
              1e-12);
  EXPECT_NEAR(cpu.decode.per_layer,
              cpu.decode.ctog + cpu.decode.gtoc +
                  std::max({cpu.decode.dtoc, cpu.decode.ctod, cpu.decode.comp}),
              1e-12);
}

// Published generation throughput on a T4 (FLEXGEN.md anchor tables).
struct Anchor {
  const char* what;
  ModelShape model;
  Policy policy;
  int gen_len;
  double heavy_ratio;  // 0 = full cache
  DecodeContext ctx;
  double published, band;
};

TEST(CostModel, ReproducesPublishedT4Throughput) {
  const HardwareProfile hw = t4();
  Policy p67 = make(2, 1, 100, 0, 100, 0, 100, 0, false);
  p67.overlap = false;
  Policy p175 = make(32, 8, 0, 50, 0, 0, 0, 100, true);
  p175.pin_weight = false;
  const Anchor anchors[] = {
      {"FlexGen 6.7B", opt(32, 4096, 32), p67, 32, 0, DecodeContext::Mean, 25.26, 0.25},
      {"FlexGen 30B", opt(48, 7168, 56), make(48, 3, 20, 80, 0, 100, 0, 100, true), 32, 0,
       DecodeContext::FirstStep, 7.32, 0.25},
      {"FlexGen 175B", opt(96, 12288, 96), p175, 32, 0, DecodeContext::FirstStep, 0.69, 0.25},
      {"H2O 30B 512+32", opt(48, 7168, 56), make(52, 14, 0, 100, 0, 100, 0, 100, true), 32, 0.1,
       DecodeContext::FirstStep, 12.7, 0.30},
      {"H2O 30B 512+512", opt(48, 7168, 56), make(52, 8, 0, 100, 0, 100, 0, 100, true), 512, 0.2,
       DecodeContext::FirstStep, 18.83, 0.30},
      {"H2O 30B 512+1024", opt(48, 7168, 56), make(44, 6, 0, 100, 0, 100, 0, 100, true), 1024, 0.3,
       DecodeContext::FirstStep, 13.82, 0.30},
  };
  for (const Anchor& a : anchors) {
    Workload w;
    w.gen_len = a.gen_len;
    if (a.heavy_ratio > 0) {
      w.kv.policy = "h2o";
      w.kv.heavy_ratio = w.kv.recent_ratio = a.heavy_ratio;
    }
    const double tp = estimate_cost(a.model, hw, a.policy, w, a.ctx).total_tok_s;
    EXPECT_NEAR(tp / a.published, 1.0, a.band) << a.what << ": predicted " << tp;
  }
}

TEST(CostModel, MemoryPeaksAndFitCheck) {
  const ModelShape m = opt(24, 2048, 32);
  Workload w;
  w.prompt_len = 128;
  w.gen_len = 16;
  const Policy p = make(4, 2, 0, 0, 0, 100, 100, 0, true);  // weights on disk, cache on cpu
  const MemoryEstimate me = estimate_memory(m, p, w, /*separate_device=*/true);
  const double weights =
      2 * (24 * (12.0 * 2048 * 2048 + 13 * 2048) + (50272.0 + 2050) * 2048 + 2 * 2048);
  // Each of the 24 * 16 + 4 tensors is allocated in whole 4 KiB units.
  EXPECT_GE(me.peak.disk, weights);
  EXPECT_LE(me.peak.disk, weights + (24 * 16 + 4) * 4096.0);
  EXPECT_GE(me.decode.host, 24 * 8 * 144 * 4.0 * 2048);  // the full KV of the block
  HardwareLimits limits;
  limits.host_mem = 64ull << 20;
  try {
    check_fits(m, p, w, limits, /*separate_device=*/true);
    FAIL() << "a 64 MiB host budget fit";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("host: estimated peak"), std::string::npos) << msg;
    EXPECT_NE(msg.find("exceeds budget 64.00 MiB"), std::string::npos) << msg;
  }
  limits.host_mem = 64ull << 30;
  EXPECT_NO_THROW(check_fits(m, p, w, limits, /*separate_device=*/true));
}

}  // namespace
}  // namespace h2oflex::policy
