// A Hugging Face OPT config.json read into a plain struct, validated key by key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "models/opt/opt_config.h"

namespace h2oflex {

struct HfOptConfig {
  // Required keys.
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_hidden_layers = 0;
  int64_t ffn_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  // Optional keys, defaulted as transformers' OPTConfig does.
  int64_t word_embed_proj_dim = 0;  // absent: hidden_size
  bool do_layer_norm_before = true;
  std::string activation_function = "relu";  // the only one supported
  int32_t pad_token_id = 1;
  int32_t bos_token_id = 2;
  int32_t eos_token_id = 2;
  std::string torch_dtype;  // "float32", "float16", "bfloat16", or "" when absent
};

// Reads `path` (a config.json, or a directory holding one). Throws InputError naming the file and
// the key for a missing required key, a wrong type, a non-positive size, hidden_size not divisible
// by num_attention_heads, or a setting this engine does not implement (activation other than relu,
// enable_bias false, layer_norm_elementwise_affine false, _remove_final_layer_norm true, a
// model_type other than "opt").
HfOptConfig read_hf_opt_config(const std::filesystem::path& path);

// The engine's OptConfig for these hyper-parameters; `name` labels it (e.g. the directory name).
OptConfig to_opt_config(const HfOptConfig& hf, const std::string& name);

}  // namespace h2oflex
