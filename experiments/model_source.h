// Where a run's model comes from: the published OPT family with dummy weights, or a Hugging Face
// directory (config.json + safetensors).
#pragma once

#include <memory>
#include <string>

#include "engine/model_layout.h"
#include "models/opt/opt_model.h"

namespace h2oflex {

struct ModelSource {
  OptConfig config;
  std::shared_ptr<const OptModel> model;  // the engine's view of `config`
  WeightProducer producer;                // fills one tensor by spec
  PartialWeightProducer partial;          // part of a tensor (dummy weights only; else empty)
  std::string description;                // "opt-1.3b (dummy, seed 1)" or the directory
  std::string key;                        // identifies the weights for on-disk layout reuse
};

// `model` is an OPT name or a directory. Dummy weights need an OPT name (or a directory's
// config.json); a directory without `dummy` reads its safetensors.
ModelSource open_model_source(const std::string& model, bool dummy, uint64_t seed);

}  // namespace h2oflex
