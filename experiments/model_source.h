// Where a run's model comes from: a published shape (any family in models/model_catalog) with
// dummy weights, or a Hugging Face directory (config.json + safetensors, or an offload layout
// written by `h2oflex convert`).
#pragma once

#include <memory>
#include <string>

#include "engine/model_layout.h"
#include "models/decoder_model.h"

namespace h2oflex {

struct ModelSource {
  std::shared_ptr<const DecoderModel> model;
  WeightProducer producer;        // fills one tensor by spec
  PartialWeightProducer partial;  // part of a tensor (dummy weights only; else empty)
  std::string description;        // "opt-1.3b (dummy, seed 1)" or the directory
  std::string key;                // identifies the weights for on-disk layout reuse
  // What the weights are, wherever they lie (a moved directory keeps it, changed weights do
  // not): the checkpoint's fingerprint (the one in `key`), an offload layout's index (its
  // checksums), or for dummy weights the model's shape, by name or config.json, and the seed.
  std::string content;
};

// `model` is a published name or a directory. Dummy weights need a published name (or a
// directory's config.json); a directory without `dummy` reads its safetensors.
ModelSource open_model_source(const std::string& model, bool dummy, uint64_t seed);

}  // namespace h2oflex
