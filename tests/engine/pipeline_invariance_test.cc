// The pipeline must generate exactly what the in-RAM path generates, for every valid policy:
// any placement of weights / KV / activations (disk included), overlap on or off, attention
// delegated or not, and any split of the block into GPU batches.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "experiments/run_command.h"
#include "runtime/engine/generator.h"
#include "runtime/engine/pipeline.h"

namespace h2oflex {
namespace {

OptConfig tiny_config(bool pre_ln) {
  OptConfig c;
  c.name = pre_ln ? "tiny-preln" : "tiny-postln";
  c.hidden = 64;
  c.heads = 4;
  c.layers = 3;
  c.ffn = 128;
  c.vocab = 300;
  c.max_positions = 64;
  c.word_embed_dim = pre_ln ? 64 : 32;
  c.pre_layer_norm = pre_ln;
  return c;
}

std::vector<std::vector<int32_t>> prompts(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> p(static_cast<size_t>(n));
  for (auto& s : p) {
    const int len = 5 + static_cast<int>(rng() % 12);  // different lengths: left padding
    for (int i = 0; i < len; ++i) s.push_back(4 + static_cast<int32_t>(rng() % 296));
  }
  return p;
}

std::string temp_dir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("h2oflex-pipeline-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

policy::Policy random_policy(std::mt19937& rng, int block) {
  static const int splits[] = {1, 2, 4, 8};
  policy::Policy p;
  do {
    p.gpu_batch_size = splits[rng() % 4];
  } while (block % p.gpu_batch_size != 0);
  p.num_gpu_batches = block / p.gpu_batch_size;
  auto split = [&](double& gpu, double& cpu) {
    const int a = static_cast<int>(rng() % 101);
    const int b = static_cast<int>(rng() % (101 - a));
    gpu = a;
    cpu = b;
  };
  split(p.w_gpu, p.w_cpu);
  split(p.cache_gpu, p.cache_cpu);
  split(p.act_gpu, p.act_cpu);
  p.overlap = rng() % 2;
  p.cpu_cache_compute = rng() % 2;
  p.pin_weight = rng() % 2;
  return p;
}

void expect_invariant(const OptConfig& cfg, const EvictionRule& rule, int gen_len, int policies) {
  const int block = 8;
  const auto ps = prompts(block, 7);
  GenerateOptions gen;
  gen.gen_len = gen_len;
  gen.eviction = rule;
  gen.capture_kept = true;
  const OptWeights w = load_opt_weights(cfg, DType::F32, dummy_weight_producer(3));
  const GenerateOutput ref = generate_in_ram(cfg, w, ps, gen);
  ASSERT_EQ(ref.tokens.size(), static_cast<size_t>(block));
  std::mt19937 rng(11);
  for (int i = 0; i < policies; ++i) {
    PipelineSpec spec;
    spec.cfg = cfg;
    spec.producer = dummy_weight_producer(3);
    spec.weights_key = cfg.name + ":dummy:seed=3";
    spec.policy = random_policy(rng, block);
    if (i == 0) {  // everything on disk
      spec.policy.w_gpu = spec.policy.w_cpu = 0;
      spec.policy.cache_gpu = spec.policy.cache_cpu = 0;
      spec.policy.act_gpu = spec.policy.act_cpu = 0;
    }
    spec.limits.disk_path = temp_dir();
    spec.gen = gen;
    spec.prompts = ps;
    const PipelineResult r = run_pipeline(spec);
    EXPECT_EQ(tokens_sha256(r.tokens), tokens_sha256(ref.tokens))
        << "policy " << spec.policy.summary();
    // The same tokens kept in every layer, sequence and head, wherever the KV lives.
    EXPECT_EQ(r.kept, ref.kept) << "policy " << spec.policy.summary();
    if (i == 0) {
      uint64_t disk_weight_reads = 0;
      for (const auto& m : r.bytes_moved) {
        if (m.kind == DataKind::Weight && m.src == TierKind::Disk && m.phase == "decode") {
          disk_weight_reads += m.bytes;
        }
      }
      EXPECT_GT(disk_weight_reads, 0u);
      EXPECT_TRUE(std::filesystem::exists(
          model_layout_dir(spec.limits.disk_path, spec.weights_key, DType::F32)));
      EXPECT_GT(r.peak_bytes.at("disk"), 0u);
    }
  }
}

// Removes the per-process scratch directory (weight layouts, disk tier files) at exit.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

TEST(PipelineInvariance, FullCacheRandomPolicies) {
  expect_invariant(tiny_config(true), EvictionRule{}, 6, 20);
}

TEST(PipelineInvariance, PostLayerNormModel) {
  expect_invariant(tiny_config(false), EvictionRule{}, 5, 6);
}

TEST(PipelineInvariance, H2OEvictionRandomPolicies) {
  EvictionRule rule;
  rule.kind = EvictionRule::Kind::H2O;
  rule.heavy = 2;
  rule.recent = 3;
  expect_invariant(tiny_config(true), rule, 8, 8);
}

TEST(PipelineWeights, ACorruptedLayoutIsCaughtOnFirstRead) {
  PipelineSpec spec;
  spec.cfg = tiny_config(true);
  spec.producer = dummy_weight_producer(4);
  spec.weights_key = "tiny:corrupt-test";
  spec.policy.gpu_batch_size = 2;
  spec.policy.w_gpu = spec.policy.w_cpu = 0;  // every weight read from the layout on disk
  spec.limits.disk_path = temp_dir();
  spec.gen.gen_len = 3;
  spec.prompts = prompts(2, 5);
  const auto first = run_pipeline(spec);  // writes the layout
  const std::string data =
      model_layout_dir(spec.limits.disk_path, spec.weights_key, DType::F32) + "/weights.bin";
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4096 * 3, std::ios::end);  // inside one of the last tensors
    const char bad = 0x55;
    f.write(&bad, 1);
  }
  try {
    run_pipeline(spec);
    FAIL() << "a corrupted weight went unnoticed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  EXPECT_EQ(first.tokens.size(), 2u);
}

TEST(PipelineInvariance, OverBudgetPolicyIsRefusedWithTheEstimate) {
  PipelineSpec spec;
  spec.cfg = tiny_config(true);
  spec.producer = dummy_weight_producer(3);
  spec.policy.gpu_batch_size = 2;
  spec.limits.device_mem = 4096;
  spec.gen.gen_len = 4;
  spec.prompts = prompts(2, 1);
  try {
    run_pipeline(spec);
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("device needs an estimated"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace h2oflex
