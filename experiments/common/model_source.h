// Where a run's model comes from: a published shape (any family in models/model_catalog) with
// dummy weights, a Hugging Face directory (config.json + safetensors, or an offload layout
// written by `h2oflex convert`), or a GGUF file.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/model_layout.h"
#include "engine/request.h"
#include "models/decoder_model.h"

namespace h2oflex {

struct ModelSource {
  std::shared_ptr<const DecoderModel> model;
  WeightProducer producer;        // fills one tensor by spec
  PartialWeightProducer partial;  // part of a tensor (dummy weights only; else empty)
  PackedWeightProducer packed;    // a tensor's stored blocks (GGUF files only; else empty)
  std::string description;  // what runs: "opt-1.3b (dummy weights, seed 1)", "DIR (weights from F)"
  std::string key;          // identifies the weights for on-disk layout reuse
  // What the weights are, wherever they lie (a moved directory keeps it, changed weights do
  // not): the checkpoint's fingerprint (the one in `key`), an offload layout's index (its
  // checksums), or for dummy weights the model's shape, by name or config.json, and the seed.
  std::string content;
  bool dummy = false;  // seeded random weights, not a checkpoint's
};

// `model` is a published name or a directory; `dummy` is the config's `dummy:` key, absent when
// not written. The one rule for every command: a published name has no weights here, so it runs
// on dummy weights unless `dummy: false` asks for a checkpoint (refused); a directory means the
// weights it holds (safetensors, or an offload layout written by `h2oflex convert`) unless
// `dummy: true` is written, and a directory holding none is refused naming `dummy`. A path
// ending in .gguf is a GGUF file (models/gguf): its weights, or with `dummy: true` its shape.
ModelSource open_model_source(const std::string& model, std::optional<bool> dummy, uint64_t seed);

// The model of an engine request: the source's model, weights and their key.
engine::ModelInput engine_model_input(const ModelSource& source);

}  // namespace h2oflex
