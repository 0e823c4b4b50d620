#include "models/opt/opt_config.h"

namespace h2oflex {

namespace {
OptConfig make(const char* name, int64_t hidden, int64_t heads, int64_t layers) {
  OptConfig c;
  c.name = name;
  c.hidden = hidden;
  c.heads = heads;
  c.layers = layers;
  c.ffn = 4 * hidden;
  c.word_embed_dim = hidden;
  return c;
}

std::vector<OptConfig> family() {
  std::vector<OptConfig> f = {
      make("opt-125m", 768, 12, 12),   make("opt-350m", 1024, 16, 24),
      make("opt-1.3b", 2048, 32, 24),  make("opt-2.7b", 2560, 32, 32),
      make("opt-6.7b", 4096, 32, 32),  make("opt-13b", 5120, 40, 40),
      make("opt-30b", 7168, 56, 48),   make("opt-66b", 9216, 72, 64),
      make("opt-175b", 12288, 96, 96),
  };
  // opt-350m is the odd one: post-LayerNorm and 512-wide word embeddings projected to 1024.
  f[1].word_embed_dim = 512;
  f[1].pre_layer_norm = false;
  return f;
}
}  // namespace

int64_t OptConfig::layer_parameter_count() const {
  const int64_t h = hidden;
  // q, k, v, out projections with biases; fc1, fc2 with biases; two LayerNorms.
  return 4 * (h * h + h) + (h * ffn + ffn) + (ffn * h + h) + 4 * h;
}

int64_t OptConfig::parameter_count() const {
  int64_t n = layers * layer_parameter_count();
  n += vocab * word_embed_dim;                              // token embedding, tied with lm_head
  n += (max_positions + 2) * hidden;                        // learned positions (offset 2)
  if (pre_layer_norm) n += 2 * hidden;                      // final LayerNorm
  if (has_projections()) n += 2 * hidden * word_embed_dim;  // project_in / project_out
  return n;
}

std::optional<OptConfig> opt_config_by_name(const std::string& name) {
  std::string n = name;
  if (n.rfind("facebook/", 0) == 0) n = n.substr(9);
  for (const OptConfig& c : family()) {
    if (c.name == n) return c;
  }
  return std::nullopt;
}

std::vector<std::string> opt_model_names() {
  std::vector<std::string> names;
  for (const OptConfig& c : family()) names.push_back(c.name);
  return names;
}

}  // namespace h2oflex
