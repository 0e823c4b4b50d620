// GPT-NeoX hyper-parameters (the Pythia suite): published shapes and configs read from a Hugging
// Face GPTNeoXForCausalLM directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models/rope.h"

namespace h2oflex {

struct NeoxConfig {
  std::string name;
  int64_t hidden = 0, heads = 0, layers = 0, ffn = 0;
  int64_t vocab = 50304;
  int64_t max_positions = 2048;
  double rotary_pct = 0.25;  // share of each head's dimensions that is rotated
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  bool parallel_residual = true;  // x + attn(ln1(x)) + mlp(ln2(x))
  bool attention_bias = true;     // biases on query_key_value and dense
  bool tied_embeddings = false;
  float layer_norm_eps = 1e-5f;
  int32_t bos_id = 0, eos_id = 0, pad_id = 0;

  int64_t head_dim() const { return hidden / heads; }
  int64_t rot_dim() const;  // int(head_dim * rotary_pct), as HF truncates it
};

// pythia-1b, pythia-6.9b, pythia-12b (and "EleutherAI/pythia-..." spellings).
std::optional<NeoxConfig> neox_config_by_name(const std::string& name);
std::vector<std::string> neox_model_names();

// config.json of a GPTNeoXForCausalLM directory; InputError naming the file and key for a missing
// or malformed key, an activation other than gelu, an odd rotary width, or an unsupported
// rope_scaling.
NeoxConfig read_hf_neox_config(const std::filesystem::path& path, const std::string& name);

}  // namespace h2oflex
