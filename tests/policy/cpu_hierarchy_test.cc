// The cost model on the CPU-only hierarchy (device = RAM arena) against byte counts derived by
// hand from what the engine moves: host-resident weights and activations are used in place,
// a host-resident KV cache is used in place with cpu_cache_compute, KV homes in host memory
// exchange whole slot arrays (allocated capacity) with the workspace, and disk homes their
// filled slots and log.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "policy/cost_model.h"
#include "policy/hardware.h"
#include "runtime/core/error.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

// Round numbers so the expected values are easy to derive by hand.
HardwareProfile cpu_profile() {
  HardwareProfile hw;
  hw.name = "cpu";
  hw.compute_device = ComputeDevice::Cpu;
  hw.device_mem = 8ull << 30, hw.host_mem = 8ull << 30, hw.disk_mem = 64ull << 30;
  hw.ctog_bdw = hw.gtoc_bdw_cache = hw.gtoc_bdw_hidden = 10e9;
  hw.dtoc_bdw = 1e9;
  hw.ctod_bdw_cache_p = hw.ctod_bdw_hidden_p = hw.ctod_bdw_g = 2e9;
  hw.device_mem_bdw = 20e9;
  hw.mm_flops_p = 400e9, hw.mm_flops_g = 200e9;
  hw.bmm_flops_p = 20e9, hw.bmm_flops_g = hw.cpu_flops = 10e9;
  return hw;
}

ModelShape opt1_3b() {
  ModelShape m = testing_support::opt(24, 2048, 32);
  m.name = "opt-1.3b";
  return m;
}

Policy make(int gbs, double wg, double wc, double cg, double cc, double hg, double hc, bool ccc) {
  Policy p;
  p.gpu_batch_size = gbs;
  p.w_gpu = wg, p.w_cpu = wc, p.cache_gpu = cg, p.cache_cpu = cc, p.act_gpu = hg, p.act_cpu = hc;
  p.cpu_cache_compute = ccc;
  return p;
}

constexpr double kH = 2048;
const Workload kWork{32, 8, {}};  // 32 + 8, full cache: 40 slots per sequence and layer

TEST(CpuHierarchy, HostResidentWeightsAndDelegatedCacheMoveNothing) {
  const HardwareProfile hw = cpu_profile();
  const CostEstimate all_arena =
      estimate_cost(opt1_3b(), hw, make(8, 100, 0, 100, 0, 100, 0, false), kWork);
  const CostEstimate host =
      estimate_cost(opt1_3b(), hw, make(8, 0, 100, 0, 100, 0, 100, true), kWork);
  for (const PhaseTerms* t : {&host.prefill, &host.decode}) {
    EXPECT_EQ(t->ctog, 0);
    EXPECT_EQ(t->gtoc, 0);
    EXPECT_EQ(t->dtoc, 0);
    EXPECT_EQ(t->ctod, 0);
  }
  // Computing in place costs what computing in the arena does.
  EXPECT_NEAR(host.total_s, all_arena.total_s, 1e-12 * all_arena.total_s);
}

TEST(CpuHierarchy, HostCacheWithoutDelegationCopiesWholeSlotArrays) {
  const HardwareProfile hw = cpu_profile();
  const CostEstimate e =
      estimate_cost(opt1_3b(), hw, make(8, 100, 0, 0, 100, 100, 0, false), kWork);
  const double slots_bytes = 8 * 40 * 2 * 2 * kH;  // bls x (s + n) x K,V x bf16 x h
  EXPECT_NEAR(e.decode.ctog, slots_bytes / 10e9, 1e-15);
  EXPECT_NEAR(e.decode.gtoc, 8 * 2 * 2 * kH / 10e9, 1e-15);  // the changed slot goes back
  EXPECT_NEAR(e.prefill.gtoc, slots_bytes / 10e9, 1e-15);    // prefill stores the arrays
  // Memcpy by the computing cores adds to the step.
  EXPECT_NEAR(e.decode.per_layer, e.decode.ctog + e.decode.gtoc + e.decode.comp, 1e-15);
}

// A disk cache through its log (engine/kv_log.h): a step reads the filled slots (the mean
// context, 32 + 8 / 2 = 36) and the log, and appends one entry per GPU batch; 7 steps are too
// few to compact (sqrt(2 W / r) = sqrt(72) > 7), so the log adds its mean, 6 / 2 entries, to
// the reads. The disk's reads and writes overlap compute, as do the weights' reads.
TEST(CpuHierarchy, DiskCacheReadsItsContextAndLogAndOverlapsCompute) {
  HardwareProfile hw = cpu_profile();
  hw.disk_write_op_s = 10e-6;
  const ModelShape m = opt1_3b();
  const CostEstimate e = estimate_cost(m, hw, make(8, 50, 0, 0, 0, 100, 0, true), kWork);
  const double token = 2 * 2 * kH;  // K and V, bf16
  const double layer_bytes = 2 * (4 * (kH * kH + kH) + 2 * kH * 8192 + 8192 + 5 * kH);
  const double entry = 8 * token;  // a step's changed records of the block
  const double kv_read = (8 * 36 * token + 3 * entry) / 1e9 + 2 * 10e-6;
  const double kv_write = entry / 2e9 + 10e-6;  // one request
  EXPECT_NEAR(e.decode.dtoc, kv_read + 0.5 * layer_bytes / 1e9, 1e-12);
  EXPECT_NEAR(e.decode.ctod, kv_write, 1e-15);
  // Every slot, prompt + gen: the base's first write covers the whole home (no holes).
  EXPECT_NEAR(e.prefill.ctod, 8 * (32 + 8) * token / 2e9, 1e-15);
  EXPECT_NEAR(e.prefill.dtoc, 0.5 * layer_bytes / 1e9, 1e-12);
  EXPECT_EQ(e.decode.unhidden, 0);
  EXPECT_NEAR(e.decode.per_layer, std::max(e.decode.dtoc + e.decode.ctod, e.decode.comp), 1e-12);
  EXPECT_NEAR(e.prefill.per_layer, std::max({e.prefill.dtoc, e.prefill.ctod, e.prefill.comp}),
              1e-12);
  // A long generation compacts: the log costs sqrt(2 W r) a step, half of it read.
  const Workload longer{32, 200, {}};
  const CostEstimate l = estimate_cost(m, hw, make(8, 50, 0, 0, 0, 100, 0, true), longer);
  const double live = 8 * (32 + 100) * token;
  EXPECT_NEAR(l.decode.ctod, (entry + std::sqrt(2 * live * entry) / 2) / 2e9 + 10e-6, 1e-12);
}

TEST(CpuHierarchy, WeightsOnDiskWithTheCacheInRamOverlapCompute) {
  const HardwareProfile hw = cpu_profile();
  const CostEstimate e = estimate_cost(opt1_3b(), hw, make(8, 0, 0, 0, 100, 100, 0, true), kWork);
  const double layer_bytes = 2 * (4 * (kH * kH + kH) + 2 * kH * 8192 + 8192 + 5 * kH);
  EXPECT_NEAR(e.decode.dtoc, layer_bytes / 1e9, 1e-12);
  EXPECT_EQ(e.decode.unhidden, 0);
  EXPECT_NEAR(e.decode.per_layer, std::max(e.decode.dtoc, e.decode.comp), 1e-15);
}

// Between measured batches the step time is affine in the rows: batch / rate is interpolated
// linearly (4: 0.04 ns, 16: 0.08 ns per unit of per-row work -> 8: 0.0533 ns = 150 GFLOP/s,
// 12: 0.0667 ns; 16: 0.08, 64: 0.2133 -> 32: 0.1244 ns).
TEST(CpuHierarchy, DecodeGemmRateFollowsTheBatchTable) {
  HardwareProfile hw = cpu_profile();
  hw.device_mem_bdw = 1e15;  // keep the weight-streaming bound out of the way
  hw.mm_flops_g_by_batch = {{4, 100e9}, {16, 200e9}, {64, 300e9}};
  const ModelShape m = opt1_3b();
  const double gemm_tok = 2 * (4 * kH * kH + 2 * kH * 8192);
  for (auto [gbs, rate] : std::initializer_list<std::pair<int, double>>{
           {2, 100e9},
           {4, 100e9},
           {8, 150e9},
           {12, 12 / (0.2e-9 / 3)},
           {16, 200e9},
           {32, 32 / ((0.08 + (64.0 / 300 - 0.08) / 3) * 1e-9)},
           {64, 300e9},
           {256, 300e9}}) {
    const CostEstimate e = estimate_cost(m, hw, make(gbs, 100, 0, 100, 0, 100, 0, false), kWork);
    const double attn = e.decode.comp - gbs * gemm_tok / rate;
    // What is left after the GEMMs is attention: positive and linear in the batch.
    const CostEstimate one = estimate_cost(m, hw, make(1, 100, 0, 100, 0, 100, 0, false), kWork);
    const double attn1 = one.decode.comp - gemm_tok / 100e9;
    EXPECT_NEAR(attn, gbs * attn1, 1e-9 * gbs) << "gbs " << gbs;
  }
}

TEST(CpuHierarchy, DiskActivationsAreSynchronous) {
  const HardwareProfile hw = cpu_profile();
  const ModelShape m = opt1_3b();
  Policy p = make(8, 100, 0, 100, 0, 0, 0, false);  // hidden states on disk
  const CostEstimate e = estimate_cost(m, hw, p, kWork);
  const double prefill_bytes = 2 * 32 * kH * 8, decode_bytes = 2 * kH * 8;  // act_bytes 2
  EXPECT_NEAR(e.prefill.per_layer,
              std::max({e.prefill.dtoc, e.prefill.ctod, e.prefill.comp}) + prefill_bytes / 1e9 +
                  prefill_bytes / 2e9,
              1e-12);
  EXPECT_NEAR(e.decode.per_layer, e.decode.comp + decode_bytes / 1e9 + decode_bytes / 2e9, 1e-12);
}

}  // namespace
}  // namespace h2oflex::policy

namespace h2oflex::policy {
namespace {

TEST(CpuHierarchy, LayerOverheadIsPaidPerLayerAndGpuBatch) {
  HardwareProfile hw = cpu_profile();
  Policy p = make(4, 100, 0, 100, 0, 100, 0, false);
  p.num_gpu_batches = 3;
  const CostEstimate a = estimate_cost(opt1_3b(), hw, p, kWork);
  hw.layer_overhead_s = 1e-3;
  const CostEstimate b = estimate_cost(opt1_3b(), hw, p, kWork);
  EXPECT_NEAR(b.prefill.comp - a.prefill.comp, 3e-3, 1e-12);
  EXPECT_NEAR(b.decode.comp - a.decode.comp, 3e-3, 1e-12);
  // 24 layers: prefill once, decode for each of the 7 steps after the first token.
  EXPECT_NEAR(b.total_s - a.total_s, 24 * 3e-3 * (1 + 7), 1e-9);
  // The key is optional, must not be negative, and round-trips.
  const HardwareProfile back =
      parse_hardware_profile(YAML::Load(hardware_profile_to_yaml(hw)), "x");
  EXPECT_DOUBLE_EQ(back.layer_overhead_s, 1e-3);
  YAML::Node n = YAML::Load(hardware_profile_to_yaml(hw));
  n["layer_overhead_s"] = -1;
  EXPECT_THROW(parse_hardware_profile(n, "x"), InputError);
}

TEST(CpuHierarchy, BatchTableAndWriteOpCostRoundTripAndAreChecked) {
  HardwareProfile hw = cpu_profile();
  hw.disk_write_op_s = 5e-6;
  hw.mm_flops_g_by_batch = {{4, 0.1e12}, {64, 0.3e12}};
  const HardwareProfile back =
      parse_hardware_profile(YAML::Load(hardware_profile_to_yaml(hw)), "x");
  EXPECT_DOUBLE_EQ(back.disk_write_op_s, 5e-6);
  ASSERT_EQ(back.mm_flops_g_by_batch.size(), 2u);
  EXPECT_EQ(back.mm_flops_g_by_batch[1].first, 64);
  EXPECT_NEAR(back.mm_flops_g_by_batch[1].second, 0.3e12, 1);
  // 16 is a fifth of the way from 4 to 64: a fifth of the way between batch / rate at each.
  EXPECT_NEAR(back.mm_flops_g_at(16), 16 / ((4 / 0.1 + (64 / 0.3 - 4 / 0.1) / 5) * 1e-12), 1);
  EXPECT_DOUBLE_EQ(cpu_profile().mm_flops_g_at(16), 200e9);  // no table: the constant
  // Written unordered in YAML, read sorted.
  YAML::Node n = YAML::Load(hardware_profile_to_yaml(hw));
  n["mm_flops_g_by_batch"] = YAML::Load("{64: 0.3, 8: 0.15}");
  EXPECT_EQ(parse_hardware_profile(n, "x").mm_flops_g_by_batch.front().first, 8);
  for (const char* bad : {"{0: 0.1}", "{4: -0.1}", "{4: x}", "[1, 2]", "{}"}) {
    n["mm_flops_g_by_batch"] = YAML::Load(bad);
    try {
      parse_hardware_profile(n, "hw.yaml");
      ADD_FAILURE() << bad << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("hw.yaml: mm_flops_g_by_batch"), std::string::npos)
          << e.what();
    }
  }
  n = YAML::Load(hardware_profile_to_yaml(hw));
  n["disk_write_op_s"] = -1e-6;
  EXPECT_THROW(parse_hardware_profile(n, "x"), InputError);
}

}  // namespace
}  // namespace h2oflex::policy
