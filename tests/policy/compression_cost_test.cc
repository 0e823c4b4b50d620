// FlexGen's 4-bit compression in the cost model and the planner: the bytes moved (against
// StorageFormat and hand-derived group arithmetic), the (de)quantization time, the profile keys
// that rate it, the search bound and the planner's compression switch.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "policy/cost_model.h"
#include "policy/hardware.h"
#include "policy/search.h"
#include "runtime/core/storage_format.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

constexpr double kGiB = 1073741824.0;

using testing_support::error_of;
using testing_support::make;
using testing_support::opt;
using testing_support::t4;

Policy compressed(Policy p, bool weight, bool cache) {
  p.compress_weight = weight;
  p.compress_cache = cache;
  return p;
}

// Bytes of one group-wise 4-bit row of n values, written out: n/2 code bytes (rounded up) and
// an fp16 minimum and step per group of 64.
double packed_row(double n) {
  return std::ceil(n / 2) + std::ceil(n / 64) * 4;
}

// OPT layer matrices (q, k, v, out: h x h; fc1: 4h x h; fc2: h x 4h), as {rows, row length}.
std::vector<std::pair<double, double>> opt_layer_matrices(double h) {
  return {{h, h}, {h, h}, {h, h}, {h, h}, {4 * h, h}, {h, 4 * h}};
}

TEST(CompressionCost, LayerWeightBytesAreStorageFormats) {
  // hidden 200: rows that are not whole groups (200 = 3 x 64 + 8, 800 = 12 x 64 + 32).
  for (int h : {200, 4096}) {
    const ModelShape m = opt(2, h, 4);
    double plain = 0, packed_sf = 0, packed_hand = 0;
    for (const auto& [rows, row] : opt_layer_matrices(h)) {
      plain += rows * row * 2;  // bf16
      packed_sf += static_cast<double>(
          compressed_format(DType::BF16)
              .bytes(static_cast<uint64_t>(rows * row), static_cast<uint64_t>(row)));
      packed_hand += rows * packed_row(row);
    }
    EXPECT_DOUBLE_EQ(packed_sf, packed_hand) << h;
    if (h == 4096) {
      EXPECT_DOUBLE_EQ(packed_hand, 12.0 * h * h * 4.5 / 8);  // 4.5 bits a value
    }
    EXPECT_DOUBLE_EQ(m.layer_stored_weight_bytes(PackedFormat::None), m.layer_weight_bytes());
    // Vectors (biases, norms) stay plain.
    EXPECT_DOUBLE_EQ(m.layer_stored_weight_bytes(PackedFormat::Q4G64),
                     m.layer_weight_bytes() - plain + packed_sf)
        << h;
    EXPECT_DOUBLE_EQ(m.layer_decoded_weight_bytes(PackedFormat::Q4G64), plain) << h;
    EXPECT_DOUBLE_EQ(m.layer_decoded_weight_bytes(PackedFormat::None), 0);
    // What moves: weights on the host, everything else on the device, so decode ctog is the
    // layer's weights alone.
    const HardwareProfile hw = t4();
    const Policy p = make(4, 1, 0, 100, 100, 0, 100, 0, false);
    Workload w;
    const CostEstimate ep = estimate_cost(m, hw, p, w);
    const CostEstimate ec = estimate_cost(m, hw, compressed(p, true, false), w);
    EXPECT_NEAR(ep.decode.ctog, m.layer_weight_bytes() / hw.ctog_bdw, 1e-15) << h;
    EXPECT_NEAR(ec.decode.ctog, (m.layer_weight_bytes() - plain + packed_hand) / hw.ctog_bdw, 1e-15)
        << h;
  }
}

TEST(CompressionCost, CompressCacheShrinksKvBytesByTheFormatsRatio) {
  const HardwareProfile hw = t4();
  for (int h : {4096, 200}) {  // head_dim 128 (two whole groups), 50 (one partial group)
    const ModelShape m = opt(4, h, h == 4096 ? 32 : 4);
    const double head_dim = static_cast<double>(m.head_dim);
    const double ratio = packed_row(head_dim) / (2 * head_dim);
    if (h == 4096) {
      EXPECT_DOUBLE_EQ(ratio, 72.0 / 256);
    }
    EXPECT_DOUBLE_EQ(m.kv_token_bytes(PackedFormat::Q4G64) / m.kv_token_bytes(PackedFormat::None),
                     ratio);
    EXPECT_DOUBLE_EQ(
        m.kv_token_bytes(PackedFormat::Q4G64),
        2.0 * m.kv_heads * kv_storage_format(DType::BF16, PackedFormat::Q4G64).bytes(m.head_dim));
    // Weights and activations on the device, the cache on disk, attention on the device: dtoc
    // is the cache one step reads, ctod the slot it writes, prefill's ctod the prompt's K, V.
    const Policy p = make(8, 2, 100, 0, 0, 0, 100, 0, false);
    Workload w;
    const CostEstimate ep = estimate_cost(m, hw, p, w);
    const CostEstimate ec = estimate_cost(m, hw, compressed(p, false, true), w);
    EXPECT_GT(ep.decode.dtoc, 0);
    EXPECT_NEAR(ec.decode.dtoc / ep.decode.dtoc, ratio, 1e-12) << h;
    EXPECT_NEAR(ec.decode.ctod / ep.decode.ctod, ratio, 1e-12) << h;
    EXPECT_NEAR(ec.decode.ctog / ep.decode.ctog, ratio, 1e-12) << h;  // off-device KV comes up
    EXPECT_NEAR(ec.prefill.ctod / ep.prefill.ctod, ratio, 1e-12) << h;
    // And what the plan stores on disk shrinks with it (the KV is the only thing there).
    EXPECT_LT(ec.peak.disk, ep.peak.disk * (ratio + 0.05)) << h;
  }
}

TEST(CompressionCost, DequantizationTimeAtTheProfilesRates) {
  HardwareProfile hw = t4();
  const ModelShape m = opt(4, 4096, 32);
  const double h = 4096, bls = 16, ngb = 2, s = 512, ctx = 512 + 16;
  const double matrices = 12 * h * h * 2;  // a layer's weights at plain size
  const double kv_token = 4 * h;           // one token's K and V, plain
  const double rg = 24 * kGiB;
  Workload w;
  // Attention on the device over a host-resident cache.
  const Policy p = compressed(make(8, 2, 100, 0, 0, 100, 100, 0, false), true, true);
  EXPECT_DOUBLE_EQ(hw.dequant_rate_device(), rg);
  CostEstimate e = estimate_cost(m, hw, p, w);
  // FlexGen: weights dequantized per GPU batch; new K, V quantized; the read cache dequantized.
  EXPECT_NEAR(e.decode.dequant, (ngb * matrices + bls * kv_token + bls * ctx * kv_token) / rg,
              1e-12);
  EXPECT_NEAR(e.prefill.dequant, (ngb * matrices + bls * s * kv_token) / rg, 1e-12);
  // Delegated attention dequantizes the host-resident cache on the host.
  const Policy del = compressed(make(8, 2, 100, 0, 0, 100, 100, 0, true), true, true);
  e = estimate_cost(m, hw, del, w);
  EXPECT_NEAR(
      e.decode.dequant,
      (ngb * matrices + bls * kv_token) / rg + bls * ctx * kv_token / hw.dequant_rate_host(),
      1e-12);
  // The dequantization is compute time: the uncompressed policy's comp plus it.
  const Policy plain = make(8, 2, 100, 0, 0, 100, 100, 0, true);
  const CostEstimate ep = estimate_cost(m, hw, plain, w);
  EXPECT_NEAR(e.decode.comp - ep.decode.comp, e.decode.dequant, 1e-12);
  EXPECT_EQ(ep.decode.dequant, 0);
}

TEST(CompressionCost, ProfileDequantKeysDefaultsAndChecks) {
  const HardwareProfile t = t4();
  EXPECT_DOUBLE_EQ(t.dequant_bdw_g, 24 * kGiB);
  YAML::Node n = YAML::Load(hardware_profile_to_yaml(t));
  const HardwareProfile back = parse_hardware_profile(n, "x");
  EXPECT_DOUBLE_EQ(back.dequant_bdw_g, t.dequant_bdw_g);
  // Without the keys: documented defaults, and nothing written back for them.
  n.remove("dequant_bdw_g");
  const HardwareProfile d = parse_hardware_profile(n, "x");
  EXPECT_DOUBLE_EQ(d.dequant_rate_device(), d.device_mem_bdw / 2);
  EXPECT_DOUBLE_EQ(d.dequant_rate_host(), d.cpu_flops);  // 1 byte per FLOP
  EXPECT_EQ(hardware_profile_to_yaml(d).find("dequant"), std::string::npos);
  n["dequant_bdw_c"] = 3;
  EXPECT_DOUBLE_EQ(parse_hardware_profile(n, "x").dequant_rate_host(), 3 * kGiB);
  n["dequant_bdw_c"] = 0;
  EXPECT_NE(error_of([&] {
              parse_hardware_profile(n, "my.yaml");
            }).find("my.yaml: dequant_bdw_c: 0 must be > 0"),
            std::string::npos);
  n.remove("dequant_bdw_c");
  n["dequant_bdw_x"] = 3;
  EXPECT_NE(error_of([&] { parse_hardware_profile(n, "my.yaml"); }).find("unknown key"),
            std::string::npos);
}

// throughput_bound never under-estimates a placement of its batch shape and compression.
TEST(CompressionCost, ThroughputBoundIsAnUpperBound) {
  const HardwareProfile hw = t4();
  const ModelShape m = opt(8, 2048, 16);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> pct(0, 10), coin(0, 1), gbs(1, 64), ngb(1, 8);
  Workload w;
  w.gen_len = 64;
  int tight = 0;
  for (int i = 0; i < 400; ++i) {
    Policy p;
    p.gpu_batch_size = gbs(rng);
    p.num_gpu_batches = ngb(rng);
    p.compress_weight = coin(rng);
    p.compress_cache = coin(rng);
    p.overlap = coin(rng);
    const double bound = throughput_bound(m, hw, p, w);
    p.w_gpu = 10 * pct(rng);
    p.w_cpu = std::min(100 - p.w_gpu, 10.0 * pct(rng));
    p.cache_gpu = 10 * pct(rng);
    p.cache_cpu = std::min(100 - p.cache_gpu, 10.0 * pct(rng));
    p.act_gpu = coin(rng) ? 100 : 0;
    p.act_cpu = 100 - p.act_gpu;
    p.cpu_cache_compute = coin(rng);
    const double tp = estimate_cost(m, hw, p, w).total_tok_s;
    EXPECT_LE(tp, bound * (1 + 1e-12)) << p.summary();
    tight += tp > 0.5 * bound;
  }
  EXPECT_GT(tight, 10);  // not a vacuous bound
}

// Without allow_compression the planner never compresses; with it, it is never slower, and on
// the T4's OPT-30B / OPT-175B shapes (weights and KV over PCIe) strictly faster.
TEST(CompressionSearch, OnlyWhenAllowedAndNeverSlower) {
  const HardwareProfile hw = t4();
  struct Case {
    ModelShape m;
    double h2o;
  };
  const Case cases[] = {{opt(48, 7168, 56), 0}, {opt(48, 7168, 56), 0.1}, {opt(96, 12288, 96), 0}};
  for (const Case& c : cases) {
    Workload w;
    if (c.h2o > 0) {
      w.kv.policy = "h2o";
      w.kv.heavy_ratio = w.kv.recent_ratio = c.h2o;
    }
    const SearchResult plain = search_policy(c.m, hw, w);
    SearchOptions allow;
    allow.allow_compression = true;
    const SearchResult comp = search_policy(c.m, hw, w, {}, allow);
    ASSERT_TRUE(plain.found && comp.found);
    EXPECT_FALSE(plain.policy.compress_weight || plain.policy.compress_cache)
        << plain.policy.summary();
    EXPECT_GE(comp.estimate.total_tok_s, plain.estimate.total_tok_s) << comp.policy.summary();
    EXPECT_TRUE(fits_within(comp.estimate.peak, comp.capacity)) << comp.policy.summary();
    // The winner's estimate is the cost model's for its policy.
    EXPECT_DOUBLE_EQ(comp.estimate.total_tok_s, estimate_cost(c.m, hw, comp.policy, w).total_tok_s);
    if (c.h2o == 0) {
      EXPECT_TRUE(comp.policy.compress_weight || comp.policy.compress_cache)
          << comp.policy.summary();
      EXPECT_GT(comp.estimate.total_tok_s, 1.1 * plain.estimate.total_tok_s)
          << comp.policy.summary() << " vs " << plain.policy.summary();
    }
    // The compression pass costs at most about as much again as the search without it.
    EXPECT_LT(comp.evaluated, 3 * plain.evaluated);
  }
}

// On the CPU (q8_0's kernels are there) the planner chooses among weight formats by what fits:
// with RAM (the arena and 64 MiB of host; no disk) too small for the plain weights, q8_0 where
// its bytes fit in the arena (q4_g64 would be as fast at this fixed batch, as the GEMM reads
// unpacked operands either way, and is less precise), q4_g64 where only its bytes do. The
// sizes come from the format table (the footprint's packed_bytes).
TEST(CompressionSearch, ChoosesAmongWeightFormatsByWhatFits) {
  const HardwareProfile hw = load_hardware_profile(std::string(H2OFLEX_SOURCE_DIR) +
                                                   "/experiments/hardware/local_cpu.yaml");
  const ModelShape m = opt(12, 2048, 32);
  const auto model_bytes = [&](PackedFormat f) {
    const std::vector<uint64_t>* packed = m.footprint.packed(f);
    double n = 0;
    for (size_t i = 0; i < m.footprint.tensor_bytes.size(); ++i) {
      n += packed != nullptr && (*packed)[i] != 0 ? (*packed)[i] : m.footprint.tensor_bytes[i];
    }
    return n;
  };
  const double plain = model_bytes(PackedFormat::None), q8 = model_bytes(PackedFormat::Q8_0),
               q4 = model_bytes(PackedFormat::Q4G64);
  ASSERT_LT(q8, 0.65 * plain);
  ASSERT_LT(q4, 0.7 * q8);
  Workload w;
  w.prompt_len = 32;
  w.gen_len = 8;
  SearchOptions o;
  o.gpu_batch_sizes = {1};
  o.max_num_gpu_batches = 1;
  o.allow_disk = false;
  o.allow_compression = true;
  struct Case {
    double device_mem;
    PackedFormat want;
  };
  for (const Case& c :
       {Case{(q8 + plain) / 2, PackedFormat::Q8_0}, Case{(q4 + q8) / 2, PackedFormat::Q4G64}}) {
    HardwareLimits limits;
    limits.device_mem = static_cast<uint64_t>(c.device_mem);
    limits.host_mem = 64ull << 20;
    SearchOptions without = o;
    without.allow_compression = false;
    EXPECT_FALSE(search_policy(m, hw, w, limits, without).found) << "plain weights fit in RAM";
    const SearchResult r = search_policy(m, hw, w, limits, o);
    ASSERT_TRUE(r.found) << r.why_not;
    EXPECT_EQ(r.policy.weight_packing(), c.want) << r.policy.summary();
    EXPECT_EQ(r.policy.kv_packing(), PackedFormat::None) << r.policy.summary();
    EXPECT_EQ(r.policy.block_size(), 1) << r.policy.summary();
    EXPECT_DOUBLE_EQ(r.estimate.total_tok_s, estimate_cost(m, hw, r.policy, w).total_tok_s);
    EXPECT_TRUE(fits_within(r.estimate.peak, r.capacity)) << r.policy.summary();
    // The policy names its format as a run reads it.
    const std::string want_words =
        c.want == PackedFormat::Q8_0 ? "weight_format q8_0" : "compress_weight";
    EXPECT_NE(r.policy.summary().find(want_words), std::string::npos) << r.policy.summary();
  }
  // A GPU has no q8_0 kernels: the choices there stay q4_g64's.
  const SearchResult gpu = search_policy(opt(48, 7168, 56), t4(), Workload{}, {}, o);
  ASSERT_TRUE(gpu.found);
  EXPECT_NE(gpu.policy.weight_packing(), PackedFormat::Q8_0);
  EXPECT_NE(gpu.policy.kv_packing(), PackedFormat::Q8_0);
}

}  // namespace
}  // namespace h2oflex::policy
