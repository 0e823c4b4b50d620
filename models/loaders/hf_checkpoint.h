// A Hugging Face model directory: config.json plus model.safetensors or sharded safetensors.
// Which family config.json describes is models/model_catalog's business; this is the weights.
#pragma once

#include <filesystem>
#include <string_view>

#include "models/loaders/safetensors.h"

namespace h2oflex {

class HfCheckpoint {
 public:
  // Throws InputError when `dir` is missing or not a directory, or its config.json or weights are
  // missing or malformed. Only headers are read here; tensor data is read on demand.
  static HfCheckpoint open(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const SafetensorsReader& weights() const { return weights_; }

  // The tensor stored as `name` or as "model." + `name`: checkpoints saved from a ...ForCausalLM
  // carry the prefix, those saved from the bare model do not. Pass names without the prefix.
  const TensorInfo* find(std::string_view name) const;
  // Like find; throws InputError naming the directory and the tensor when absent.
  const TensorInfo& get(std::string_view name) const;
  // get() plus check_tensor_shape(): the tensor must exist with exactly this shape.
  const TensorInfo& get(std::string_view name, const Shape& expected) const;

 private:
  HfCheckpoint(std::filesystem::path dir, SafetensorsReader weights)
      : dir_(std::move(dir)), weights_(std::move(weights)) {}

  std::filesystem::path dir_;
  SafetensorsReader weights_;
};

}  // namespace h2oflex
