// Shared by the CPU and GPU pipeline tests: a tiny OPT config, prompts of different lengths, random
// valid policies, and the check that the pipeline generates exactly what the in-RAM path does.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "engine/pipeline.h"
#include "experiments/run/run_command.h"
#include "models/opt/opt_model.h"

namespace h2oflex::testing_support {

inline OptConfig tiny_config(bool pre_ln) {
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

inline std::vector<std::vector<int32_t>> prompts(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> p(static_cast<size_t>(n));
  for (auto& s : p) {
    const int len = 5 + static_cast<int>(rng() % 12);  // different lengths: left padding
    for (int i = 0; i < len; ++i) s.push_back(4 + static_cast<int32_t>(rng() % 296));
  }
  return p;
}

inline std::string temp_dir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("h2oflex-pipeline-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline policy::Policy random_policy(std::mt19937& rng, int block) {
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

// Changes a random spec before it runs (a test's own placement rule, say).
using AdjustSpec = std::function<void(PipelineSpec&, std::mt19937&)>;

// Runs `policies` random valid policies (the first with everything on disk) on `device` and
// expects the in-RAM path's tokens and kept KV sets (computed on the same device) from each.
// With `compress_weight` / `compress_cache`, every policy compresses the weights / the KV cache
// and so does the in-RAM path: compression is deterministic, so every placement gives its
// tokens.
inline void expect_invariant(std::shared_ptr<const DecoderModel> model, const KvRule& rule,
                             int gen_len, int policies, PipelineDevice device = PipelineDevice::Cpu,
                             const AdjustSpec& adjust = {}, bool compress_weight = false,
                             bool compress_cache = false,
                             PackedFormat cache_format = PackedFormat::None) {
  const int block = 8;
  const auto ps = prompts(block, 7);
  GenerationSettings gen;
  gen.gen_len = gen_len;
  gen.eviction = rule;
  gen.capture_kept = true;
  ModelWeights w = load_model_weights(*model, DType::F32, dummy_weight_producer(3));
  if (compress_weight) compress_model_weights(*model, w);
  // The reference computes on the same kind of device (a GPU's rounding differs from a CPU's).
  GenerationSettings ref_gen = gen;
  ref_gen.cache_format = compress_cache ? PackedFormat::Q4G64 : cache_format;
  ref_gen.device = device == PipelineDevice::Cuda ? Device::CUDA : Device::CPU;
  const GenerateOutput ref = generate_in_ram(*model, w, ps, ref_gen);
  ASSERT_EQ(ref.tokens.size(), static_cast<size_t>(block));
  std::mt19937 rng(11);
  for (int i = 0; i < policies; ++i) {
    PipelineSpec spec;
    spec.device = device;
    spec.model = model;
    spec.producer = dummy_weight_producer(3);
    spec.weights_key = model->name() + ":dummy:seed=3";
    spec.policy = random_policy(rng, block);
    spec.policy.compress_weight = compress_weight;
    spec.policy.compress_cache = compress_cache;
    spec.policy.cache_format = cache_format;
    if (i == 0) {  // everything on disk
      spec.policy.w_gpu = spec.policy.w_cpu = 0;
      spec.policy.cache_gpu = spec.policy.cache_cpu = 0;
      spec.policy.act_gpu = spec.policy.act_cpu = 0;
    }
    spec.limits.disk_path = temp_dir();
    spec.gen = gen;
    spec.prompts = ps;
    if (adjust) adjust(spec, rng);
    const PipelineResult r = run_pipeline(spec);
    EXPECT_EQ(tokens_sha256(r.tokens), tokens_sha256(ref.tokens))
        << pipeline_device_name(device) << " policy " << spec.policy.summary();
    // The same tokens kept in every layer, sequence and head, wherever the KV lives.
    EXPECT_EQ(r.kept, ref.kept) << pipeline_device_name(device) << " policy "
                                << spec.policy.summary();
    if (device != PipelineDevice::Cpu && spec.policy.w_cpu >= 50) {
      // A separate device computes only on its own memory: host weights are copied in.
      uint64_t staged = 0;
      for (const auto& m : r.bytes_moved) {
        if (m.kind == DataKind::Weight && m.src == TierKind::Host && m.dst == TierKind::Device) {
          staged += m.bytes;
        }
      }
      EXPECT_GT(staged, 0u) << spec.policy.summary();
    }
    if (i == 0) {
      uint64_t disk_weight_reads = 0;
      for (const auto& m : r.bytes_moved) {
        if (m.kind == DataKind::Weight && m.src == TierKind::Disk && m.phase == "decode") {
          disk_weight_reads += m.bytes;
        }
      }
      EXPECT_GT(disk_weight_reads, 0u);
      EXPECT_TRUE(std::filesystem::exists(
          model_layout_dir(spec.limits.disk_path, spec.weights_key, DType::F32, compress_weight)));
      EXPECT_GT(r.peak_bytes.at("disk"), 0u);
    }
  }
}

inline void expect_invariant(const OptConfig& cfg, const KvRule& rule, int gen_len, int policies,
                             PipelineDevice device = PipelineDevice::Cpu,
                             const AdjustSpec& adjust = {}, bool compress_weight = false,
                             bool compress_cache = false,
                             PackedFormat cache_format = PackedFormat::None) {
  expect_invariant(std::make_shared<const OptModel>(cfg), rule, gen_len, policies, device, adjust,
                   compress_weight, compress_cache, cache_format);
}

}  // namespace h2oflex::testing_support
