// OPT hyper-parameters: the published family (125m .. 175b) and configs read from a directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace h2oflex {

struct OptConfig {
  std::string name;              // "opt-1.3b", or the directory's name
  int64_t hidden = 0;            // hidden_size (h1)
  int64_t heads = 0;             // num_attention_heads
  int64_t layers = 0;            // num_hidden_layers
  int64_t ffn = 0;               // ffn_dim (h2)
  int64_t vocab = 50272;         // vocab_size
  int64_t max_positions = 2048;  // max_position_embeddings (table has +2 rows: offset 2)
  int64_t word_embed_dim = 0;    // word_embed_proj_dim; != hidden means project_in/out exist
  bool pre_layer_norm = true;    // do_layer_norm_before (false only for 350m)
  int32_t bos_id = 2;
  int32_t eos_id = 2;
  int32_t pad_id = 1;
  float layer_norm_eps = 1e-5f;

  int64_t head_dim() const { return hidden / heads; }
  bool has_projections() const { return word_embed_dim != hidden; }
  // Parameter count of the whole model (tied lm_head counted once).
  int64_t parameter_count() const;
  // Bytes of one decoder layer's weights at `bytes_per_param`.
  int64_t layer_parameter_count() const;
};

// The published OPT family; name is "opt-125m" ... "opt-175b" (a leading "facebook/" is accepted).
std::optional<OptConfig> opt_config_by_name(const std::string& name);
std::vector<std::string> opt_model_names();

}  // namespace h2oflex
