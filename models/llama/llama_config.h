// LLaMA-family hyper-parameters (Llama-2, Llama-3.x, Mistral, Qwen2): the published shapes, and
// configs read from a Hugging Face directory (model_type llama, mistral or qwen2).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/rope.h"

namespace h2oflex {

struct LlamaConfig {
  std::string name;
  std::string model_type = "llama";  // "llama", "mistral" or "qwen2"
  int64_t hidden = 0;                // hidden_size
  int64_t heads = 0;                 // num_attention_heads
  int64_t kv_heads = 0;              // num_key_value_heads (< heads: grouped-query attention)
  int64_t head_dim = 0;              // head_dim, or hidden / heads when absent
  int64_t layers = 0;                // num_hidden_layers
  int64_t ffn = 0;                   // intermediate_size
  int64_t vocab = 32000;
  int64_t max_positions = 4096;  // max_position_embeddings
  float rms_norm_eps = 1e-5f;
  bool tied_embeddings = false;  // tie_word_embeddings: lm_head is embed_tokens
  bool qkv_bias = false;         // attention_bias (Qwen2 always has q/k/v biases)
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  int32_t bos_id = 1, eos_id = 2, pad_id = 0;

  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }
};

// The published shapes: llama-2-7b/13b/70b, llama-3-8b/70b, llama-3.2-1b, mistral-7b,
// qwen2-7b (a leading organisation, "meta-llama/", is accepted).
std::optional<LlamaConfig> llama_config_by_name(const std::string& name);
std::vector<std::string> llama_model_names();

// config.json of a LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM directory. InputError
// (file and key named) for a missing or malformed key, heads not divisible by KV heads, an
// unsupported rope_scaling, a sliding window (not implemented: it would silently change results),
// mlp_bias, or an activation other than silu.
LlamaConfig read_hf_llama_config(const std::filesystem::path& path, const std::string& name);

// The config.json read_hf_llama_config reads back as `c` (rope scaling None only: a model read
// with another is refused here with InternalError, never written wrong). rms_norm_eps is the
// shortest decimal that is the same f32.
nlohmann::json hf_llama_config_json(const LlamaConfig& c);

}  // namespace h2oflex
