// The Hugging Face fixtures (tools/gen_opt_fixtures.py for OPT in tests/fixtures/opt,
// tools/gen_family_fixtures.py for LLaMA / Qwen2 / GPT-NeoX in tests/fixtures/families): logits
// at every prompt position of a left-padded batch and 16 greedy steps, and the check of the
// forward pass against them — shared by the CPU tests (tests/model) and the GPU tests (tests/gpu).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "engine/pipeline.h"
#include "experiments/common/model_source.h"

namespace h2oflex::testing_support {

// The source tree the fixtures are read from: the one the tests were built from, unless
// H2OFLEX_SOURCE_DIR names another (a test binary carried to another machine with a checkout of
// its own, as tools/gpu_check.sh --from-bundle runs it).
inline std::string fixture_source_dir() {
  const char* over = std::getenv("H2OFLEX_SOURCE_DIR");
  return over != nullptr && *over != '\0' ? over : H2OFLEX_SOURCE_DIR;
}

inline const std::string kFixtures = fixture_source_dir() + "/tests/fixtures/opt/";
inline const std::string kFamilyFixtures = fixture_source_dir() + "/tests/fixtures/families/";

inline nlohmann::json expected(const std::string& root = kFixtures) {
  std::ifstream in(root + "expected.json");
  return nlohmann::json::parse(in);
}

inline std::vector<float> read_floats(const std::string& file, size_t n,
                                      const std::string& root = kFixtures) {
  std::ifstream in(root + file, std::ios::binary);
  std::vector<float> v(n);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
  EXPECT_TRUE(in.good()) << file;
  return v;
}

struct Captured {
  std::vector<float> prefill;                // real rows only, in fixture order
  std::vector<std::vector<float>> steps;     // [step][seq * vocab]
  std::vector<std::vector<int32_t>> tokens;  // greedy
};

// The prompt set of reference `ref_name`: OPT's fixtures have one ("prompts"), the families'
// one per convention ("prompt_sets", named by the reference's "prompts").
inline const nlohmann::json& prompt_set(const nlohmann::json& e, const std::string& ref_name) {
  if (e.contains("prompts")) return e["prompts"];
  return e["prompt_sets"][e["references"][ref_name]["prompts"].get<std::string>()];
}

inline std::vector<std::vector<int32_t>> prompts(const nlohmann::json& set) {
  std::vector<std::vector<int32_t>> p;
  const auto& ids = set["input_ids"];
  const auto& lengths = set["lengths"];
  for (size_t i = 0; i < ids.size(); ++i) {
    const size_t n = lengths[i].get<size_t>(), total = ids[i].size();
    std::vector<int32_t> seq;
    for (size_t j = total - n; j < total; ++j) seq.push_back(ids[i][j].get<int32_t>());
    p.push_back(seq);
  }
  return p;
}

// `compress_weight`: the layers' matrices compressed to 4 bits (compress_model_weights).
inline Captured run_model(const std::string& dir, ops::ComputeType ct, const nlohmann::json& set,
                          int greedy_steps, Device device, const std::string& root = kFixtures,
                          bool compress_weight = false) {
  const ModelSource src = open_model_source(root + dir, /*dummy=*/false, 0);
  const DType wdt = matrix_dtype_for(ct);
  ModelWeights w = load_model_weights(*src.model, wdt, src.producer);
  if (compress_weight) compress_model_weights(*src.model, w);
  const auto ps = prompts(set);
  const int64_t seq = static_cast<int64_t>(set["input_ids"][0].size());
  Captured c;
  GenerationSettings g;
  g.gen_len = greedy_steps;
  g.stop_at_eos = false;
  g.compute = ct;
  g.kv_dtype = wdt;
  g.all_prompt_logits = true;
  g.device = device;
  g.on_logits = [&](int step, const Tensor& logits) {
    const int64_t v = logits.dim(1);
    if (step < 0) {
      for (size_t i = 0; i < ps.size(); ++i) {
        const int64_t pad = seq - static_cast<int64_t>(ps[i].size());
        for (int64_t t = pad; t < seq; ++t) {
          const float* row = logits.data<float>() + (static_cast<int64_t>(i) * seq + t) * v;
          c.prefill.insert(c.prefill.end(), row, row + v);
        }
      }
    } else {
      c.steps.emplace_back(logits.data<float>(), logits.data<float>() + logits.numel());
    }
  };
  c.tokens = generate_in_ram(*src.model, w, ps, g).tokens;
  return c;
}

struct Errors {
  double max_abs = 0, max_ref = 0;
  double rel() const { return max_abs / max_ref; }
};

inline Errors compare(const std::vector<float>& got, const std::vector<float>& ref) {
  EXPECT_EQ(got.size(), ref.size());
  Errors e;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    e.max_abs = std::max(e.max_abs, static_cast<double>(std::fabs(got[i] - ref[i])));
    e.max_ref = std::max(e.max_ref, static_cast<double>(std::fabs(ref[i])));
  }
  return e;
}

// `f32_max_abs`: the bound on logit errors with f32 arithmetic (bf16 has a relative bound).
inline void check_reference(const std::string& dir, const std::string& ref_name,
                            ops::ComputeType ct, Device device = Device::CPU,
                            double f32_max_abs = 1e-4, const std::string& root = kFixtures) {
  const nlohmann::json e = expected(root);
  ASSERT_TRUE(e["references"].contains(ref_name)) << ref_name;
  const auto& ref = e["references"][ref_name];
  const Captured c =
      run_model(dir, ct, prompt_set(e, ref_name), e["greedy_steps"].get<int>(), device, root);
  const size_t steps = e["greedy_steps"].get<size_t>();
  const size_t rows = ref["prefill_logits"]["shape"][0].get<size_t>();
  const size_t vocab = ref["prefill_logits"]["shape"][1].get<size_t>();
  const std::vector<float> prefill = read_floats(ref["prefill_logits"]["file"], rows * vocab, root);
  const std::vector<float> greedy =
      read_floats(ref["greedy_logits"]["file"], steps * 3 * vocab, root);
  const bool f32 = ct == ops::ComputeType::F32;
  Errors pe = compare(c.prefill, prefill);
  std::vector<float> got_steps;
  for (const auto& s : c.steps) got_steps.insert(got_steps.end(), s.begin(), s.end());
  Errors ge = compare(got_steps, greedy);
  if (f32) {
    EXPECT_LE(pe.max_abs, f32_max_abs) << dir << " prefill";
    EXPECT_LE(ge.max_abs, f32_max_abs) << dir << " greedy steps";
  } else {
    EXPECT_LE(pe.rel(), 2e-2) << dir << " prefill (bf16)";
    EXPECT_LE(ge.rel(), 2e-2) << dir << " greedy steps (bf16)";
  }
  for (size_t i = 0; i < 3; ++i) {
    std::vector<int32_t> want = ref["greedy_tokens"][i].get<std::vector<int32_t>>();
    EXPECT_EQ(c.tokens[i], want) << dir << " sequence " << i;
  }
}

// The tiered pipeline on the tiny-postln checkpoint: weights on disk (under `disk_path`), KV in
// host memory, 3 GPU batches of 1; expects Hugging Face's greedy tokens.
inline void check_pipeline_with_weights_on_disk(PipelineDevice device, bool cpu_cache_compute,
                                                const std::string& disk_path) {
  const nlohmann::json e = expected();
  const ModelSource src = open_model_source(kFixtures + "tiny-postln", false, 0);
  PipelineSpec spec;
  spec.device = device;
  spec.model = src.model;
  spec.producer = src.producer;
  spec.weights_key = src.key;
  spec.policy.gpu_batch_size = 1;
  spec.policy.num_gpu_batches = 3;
  spec.policy.w_gpu = 0;
  spec.policy.w_cpu = 0;
  spec.policy.cache_gpu = 0;
  spec.policy.cache_cpu = 100;
  spec.policy.cpu_cache_compute = cpu_cache_compute;
  spec.limits.disk_path = disk_path;
  spec.gen.gen_len = e["greedy_steps"].get<int>();
  spec.prompts = prompts(e["prompts"]);
  const PipelineResult r = run_pipeline(spec);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.tokens[i],
              e["references"]["tiny-postln"]["greedy_tokens"][i].get<std::vector<int32_t>>());
  }
}

}  // namespace h2oflex::testing_support
