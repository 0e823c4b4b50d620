// Policy and limits parsing: accepted forms and the messages of rejected ones.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "policy/run_policy.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

using testing_support::error_of;

TEST(ByteSize, UnitsArePowersOf1000Or1024) {
  EXPECT_EQ(parse_byte_size("16GiB", "x"), 16ull << 30);
  EXPECT_EQ(parse_byte_size("512MiB", "x"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("1.5GB", "x"), 1500000000ull);
  EXPECT_EQ(parse_byte_size("1.5TiB", "x"), 3ull << 39);
  EXPECT_EQ(parse_byte_size("4096", "x"), 4096ull);
  EXPECT_EQ(parse_byte_size(" 8 gib ", "x"), 8ull << 30);
  EXPECT_NE(error_of([] {
              parse_byte_size("16 parsecs", "hardware.host_mem");
            }).find("hardware.host_mem: invalid byte size '16 parsecs'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_byte_size("", "k"); }).find("k:"), std::string::npos);
  EXPECT_NE(error_of([] { parse_byte_size("1.5", "k"); }).find("fractional"), std::string::npos);
}

TEST(Policy, ParsesEveryField) {
  const Policy p = parse_policy(YAML::Load(R"(
    gpu_batch_size: 48
    num_gpu_batches: 3
    weights: {gpu: 20, cpu: 80}
    cache: {gpu: 0, cpu: 100}
    activations: {gpu: 0, cpu: 100}
    overlap: false
    cpu_cache_compute: true
    pin_weight: false)"));
  EXPECT_EQ(p.gpu_batch_size, 48);
  EXPECT_EQ(p.num_gpu_batches, 3);
  EXPECT_EQ(p.block_size(), 144);
  EXPECT_DOUBLE_EQ(p.w_gpu, 20);
  EXPECT_DOUBLE_EQ(p.w_cpu, 80);
  EXPECT_DOUBLE_EQ(p.w_disk(), 0);
  EXPECT_DOUBLE_EQ(p.cache_cpu, 100);
  EXPECT_DOUBLE_EQ(p.act_gpu, 0);
  EXPECT_FALSE(p.overlap);
  EXPECT_TRUE(p.cpu_cache_compute);
  EXPECT_FALSE(p.pin_weight);
  EXPECT_EQ(p.percent_string(), "20 80 0 100 0 100");
}

TEST(Policy, DiskGetsTheRestAndCpuOnlySplitsImplyNoGpu) {
  const Policy p = parse_policy(YAML::Load("{weights: {cpu: 50}, cache: {gpu: 10, cpu: 20}}"));
  EXPECT_DOUBLE_EQ(p.w_gpu, 0);
  EXPECT_DOUBLE_EQ(p.w_disk(), 50);
  EXPECT_DOUBLE_EQ(p.cache_disk(), 70);
  EXPECT_DOUBLE_EQ(p.act_gpu, 100);  // default
}

TEST(Policy, ErrorsNameTheFullKeyPath) {
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{weights: {gpu: 120, cpu: 0}}"));
            }).find("policy.weights.gpu: 120 is not a percentage in [0, 100]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{cache: {gpu: -5}}"));
            }).find("policy.cache.gpu: -5 is not a percentage"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{activations: {gpu: 60, cpu: 50}}"));
            }).find("policy.activations: gpu 60 + cpu 50 = 110 exceeds 100"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{weights: {gpu: 10, tpu: 5}}"));
            }).find("policy.weights.tpu: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{gpu_batch_sz: 4}"));
            }).find("policy.gpu_batch_sz: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{gpu_batch_size: many}"));
            }).find("policy.gpu_batch_size: 'many' is not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{gpu_batch_size: 0}"));
            }).find("policy.gpu_batch_size: 0 must be in [1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{overlap: perhaps}"));
            }).find("policy.overlap: 'perhaps' is not a boolean"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{weights: 50}"));
            }).find("policy.weights: expected a mapping"),
            std::string::npos);
  // A caller-supplied prefix is kept.
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{weights: {gpu: 101}}"), "rows[2].policy");
            }).find("rows[2].policy.weights.gpu: 101"),
            std::string::npos);
}

TEST(Policy, StagesAndMicroBlocks) {
  const Policy p = parse_policy(YAML::Load("{num_gpu_batches: 6, stages: 3, micro_blocks: 3}"));
  EXPECT_EQ(p.stages, 3);
  EXPECT_EQ(p.micro_blocks, 3);
  EXPECT_NE(p.summary().find("stages 3 micro_blocks 3"), std::string::npos) << p.summary();
  const Policy d = parse_policy(YAML::Load("{num_gpu_batches: 6}"));
  EXPECT_EQ(d.stages, 0);        // as many as the job has processes
  EXPECT_EQ(d.micro_blocks, 0);  // chosen by the pipeline
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{num_gpu_batches: 4, micro_blocks: 3}"));
            }).find("policy.micro_blocks: 3 does not divide num_gpu_batches (4)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{stages: 0}"));
            }).find("policy.stages: 0 must be in [1"),
            std::string::npos);
}

TEST(Policy, AutoSection) {
  EXPECT_TRUE(parse_policy_section(YAML::Load("auto")).is_auto);
  EXPECT_FALSE(parse_policy_section(YAML::Load("{gpu_batch_size: 2}")).is_auto);
  EXPECT_NE(error_of([] {
              parse_policy_section(YAML::Load("automatic"));
            }).find("policy: 'automatic' is neither 'auto' nor a mapping"),
            std::string::npos);
}

TEST(Policy, DescribeEchoesResolvedValues) {
  Policy p;
  p.gpu_batch_size = 8;
  p.num_gpu_batches = 2;
  p.w_gpu = 30;
  p.w_cpu = 50;
  const auto d = describe(p);
  EXPECT_EQ(std::get<double>(d.at("block_size")), 16);
  EXPECT_EQ(std::get<double>(d.at("w_disk")), 20);
  EXPECT_EQ(std::get<bool>(d.at("cpu_cache_compute")), false);
}

// weight_format / cache_format f32, f16, bf16: plain in that dtype, read as the compute's operand
// type; contradictions with compress_*, with each other, and with compute_dtype name both keys.
TEST(Policy, DtypeFormatsNameTheComputeType) {
  const Policy f16 = parse_policy(YAML::Load("{weight_format: f16, cache_format: f16}"));
  EXPECT_EQ(f16.weight_format, WeightFormat::plain_as(DType::F16));
  EXPECT_EQ(f16.cache_dtype, DType::F16);
  EXPECT_EQ(f16.cache_format, PackedFormat::None);
  EXPECT_EQ(f16.named_operand_dtype(), DType::F16);
  EXPECT_EQ(std::get<std::string>(describe(f16).at("weight_format")), "f16");
  EXPECT_EQ(std::get<std::string>(describe(f16).at("cache_format")), "f16");
  EXPECT_NE(f16.summary().find("weight_format f16 cache_format f16"), std::string::npos)
      << f16.summary();
  EXPECT_EQ(parse_policy(YAML::Load("{cache_format: bf16}")).named_operand_dtype(), DType::BF16);
  EXPECT_EQ(parse_policy(YAML::Load("{weight_format: f32}")).named_operand_dtype(), DType::F32);
  EXPECT_EQ(parse_policy(YAML::Load("{weight_format: plain}")).named_operand_dtype(), std::nullopt);

  EXPECT_NE(error_of([] { parse_policy(YAML::Load("{weight_format: f64}")); })
                .find("policy.weight_format: 'f64' is not a weight format (stored, plain, f32, "
                      "f16, bf16, q4_g64"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_policy(YAML::Load("{cache_format: q4_1}")); })
                .find("policy.cache_format: 'q4_1' is not a KV cache format (plain, f32, f16, "
                      "bf16, q4_g64, q8_0)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{weight_format: bf16, compress_weight: true}"));
            }).find("policy.weight_format: 'bf16' contradicts policy.compress_weight: true"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{cache_format: f16, compress_cache: true}"));
            }).find("policy.cache_format: 'f16' contradicts policy.compress_cache: true"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_policy(YAML::Load("{weight_format: f16, cache_format: bf16}"));
            }).find("policy.cache_format: 'bf16' contradicts policy.weight_format: f16"),
            std::string::npos);

  // Against compute_dtype: the same type or auto (nullopt) passes, another is refused.
  check_compute_dtype(f16, DType::F16, "compute_dtype");
  check_compute_dtype(f16, std::nullopt, "compute_dtype");
  check_compute_dtype(Policy{}, DType::F32, "compute_dtype");
  EXPECT_NE(error_of([&] {
              check_compute_dtype(f16, DType::F32, "compute_dtype");
            }).find("policy.weight_format: 'f16' contradicts compute_dtype: f32"),
            std::string::npos);
  const Policy kv = parse_policy(YAML::Load("{cache_format: bf16}"));
  EXPECT_NE(error_of([&] {
              check_compute_dtype(kv, DType::F32, "compute_dtype");
            }).find("policy.cache_format: 'bf16' contradicts compute_dtype: f32"),
            std::string::npos);
}

TEST(HardwareLimits, ParsesSizes) {
  const HardwareLimits h = parse_hardware_limits(
      YAML::Load("{device_mem: 16GiB, host_mem: 1.5GB, disk_mem: 4096, disk_path: /mnt/nvme}"));
  EXPECT_EQ(h.device_mem, 16ull << 30);
  EXPECT_EQ(h.host_mem, 1500000000ull);
  EXPECT_EQ(h.disk_mem, 4096ull);
  EXPECT_EQ(h.disk_path, "/mnt/nvme");
  EXPECT_NE(error_of([] {
              parse_hardware_limits(YAML::Load("{host_mem: lots}"));
            }).find("hardware.host_mem"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_hardware_limits(YAML::Load("{ram: 1GiB}"));
            }).find("hardware.ram: unknown key"),
            std::string::npos);
}

// A plan chosen by `policy: auto` is written into a suite row's config with policy_yaml and read
// back by parse_policy: every field, the storage formats included, must survive (a q8_0 plan
// once ran as plain because only compress_* were written).
TEST(PolicyYaml, ReadsBackAsTheSamePolicyFormatsIncluded) {
  Policy q8;
  q8.gpu_batch_size = 4;
  q8.num_gpu_batches = 3;
  q8.w_gpu = 0;
  q8.w_cpu = 40;
  q8.cache_gpu = 0;
  q8.cache_cpu = 100;
  q8.weight_format = WeightFormat::packed_as(PackedFormat::Q8_0);
  q8.cache_format = PackedFormat::Q8_0;
  Policy q4 = q8;
  q4.weight_format = WeightFormat::packed_as(PackedFormat::Q4G64);
  q4.compress_weight = q4.compress_cache = true;
  q4.cache_format = PackedFormat::None;
  Policy plain = q8;
  plain.weight_format = {WeightFormat::Mode::Plain, PackedFormat::None};
  plain.cache_format = PackedFormat::None;
  plain.overlap = false;
  plain.pin_weight = false;
  for (const Policy& p : {q8, q4, plain}) {
    const Policy back = parse_policy(YAML::Load(YAML::Dump(policy_yaml(p))));
    EXPECT_EQ(describe(back), describe(p)) << YAML::Dump(policy_yaml(p));
  }
  EXPECT_EQ(std::get<std::string>(describe(parse_policy(policy_yaml(q8))).at("weight_format")),
            "q8_0");
  EXPECT_EQ(std::get<std::string>(describe(parse_policy(policy_yaml(q8))).at("cache_format")),
            "q8_0");
}

}  // namespace
}  // namespace h2oflex::policy
