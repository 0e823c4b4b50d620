// SmolLM2-135M-Instruct for the real-model tests: the model directory tools/fetch_smollm2.sh
// makes (test.sh runs it first; the build takes its path from the same script), the Hugging Face
// references of tests/fixtures/smollm2/expected.json (tools/gen_smollm2_fixtures.py), and the
// engine's greedy run of one prompt with its last-position logits.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "experiments/common/model_source.h"

namespace h2oflex::real {

// The model directory, or "" after a test failure telling how to make it (never a skip: a
// missing model must not pass as a green run).
inline std::string smollm2_dir() {
  const std::filesystem::path dir = H2OFLEX_SMOLLM2_DIR;
  if (!std::filesystem::exists(dir / "config.json") ||
      !std::filesystem::exists(dir / "model.safetensors")) {
    ADD_FAILURE() << "the SmolLM2 model directory " << dir
                  << " is missing: run tools/fetch_smollm2.sh (test.sh does) and build again";
    return "";
  }
  return dir.string();
}

inline const nlohmann::json& smollm2_expected() {
  static const nlohmann::json e = [] {
    std::ifstream in(std::string(H2OFLEX_SOURCE_DIR) + "/tests/fixtures/smollm2/expected.json");
    return nlohmann::json::parse(in);
  }();
  return e;
}

// The model with its weights in `dtype`, loaded once per process and type (0.5 GB in f32).
struct LoadedModel {
  ModelSource source;
  ModelWeights weights;
};
inline const LoadedModel& smollm2_model(DType dtype) {
  static std::map<DType, std::unique_ptr<LoadedModel>> loaded;
  auto& slot = loaded[dtype];
  if (!slot) {
    slot = std::make_unique<LoadedModel>();
    slot->source = open_model_source(smollm2_dir(), std::nullopt, 0);
    slot->weights = load_model_weights(*slot->source.model, dtype, slot->source.producer);
  }
  return *slot;
}

struct GreedyRun {
  std::vector<int32_t> tokens;
  std::vector<float> last_logits;  // the last prompt position's (step 0's distribution)
};

// One prompt alone (no padding), `steps` greedy tokens without stopping at EOS, as the fixture
// script ran Hugging Face.
inline GreedyRun greedy_alone(ops::ComputeType ct, const std::vector<int32_t>& prompt, int steps) {
  const LoadedModel& m = smollm2_model(matrix_dtype_for(ct));
  GreedyRun r;
  GenerationSettings g;
  g.gen_len = steps;
  g.stop_at_eos = false;
  g.compute = ct;
  g.kv_dtype = matrix_dtype_for(ct);
  g.on_logits = [&](int step, const Tensor& logits) {
    if (step == 0)
      r.last_logits.assign(logits.data<float>(), logits.data<float>() + logits.numel());
  };
  r.tokens = generate_in_ram(*m.source.model, m.weights, {prompt}, g).tokens.at(0);
  return r;
}

// The largest difference over the recorded slice of a prompt's last-position logits, relative
// to the largest |logit| of Hugging Face's whole vector.
inline double relative_logit_error(const nlohmann::json& recorded, const std::vector<float>& got) {
  const auto ids = recorded["ids"].get<std::vector<size_t>>();
  const auto values = recorded["values"].get<std::vector<double>>();
  double worst = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got.at(ids[i])) - values[i]));
  }
  return worst / recorded["max_abs"].get<double>();
}

}  // namespace h2oflex::real
