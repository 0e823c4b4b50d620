#include "models/gpt_neox/neox_config.h"

#include "models/family_parts.h"
#include "models/loaders/hf_json.h"

namespace h2oflex {

namespace {

NeoxConfig shape(const char* name, int64_t hidden, int64_t heads, int64_t layers) {
  NeoxConfig c;
  c.name = name;
  c.hidden = hidden;
  c.heads = heads;
  c.layers = layers;
  c.ffn = 4 * hidden;
  return c;
}

std::vector<NeoxConfig> published() {
  NeoxConfig mid = shape("pythia-6.9b", 4096, 32, 32);
  mid.vocab = 50432;
  NeoxConfig big = shape("pythia-12b", 5120, 40, 36);
  big.vocab = 50688;
  return {shape("pythia-1b", 2048, 8, 16), mid, big};
}

}  // namespace

int64_t NeoxConfig::rot_dim() const {
  return static_cast<int64_t>(static_cast<double>(head_dim()) * rotary_pct);
}

std::optional<NeoxConfig> neox_config_by_name(const std::string& name) {
  const std::string n = family::published_name_key(name);
  for (const NeoxConfig& c : published()) {
    if (c.name == n) return c;
  }
  return std::nullopt;
}

std::vector<std::string> neox_model_names() {
  std::vector<std::string> names;
  for (const NeoxConfig& c : published()) names.push_back(c.name);
  return names;
}

NeoxConfig read_hf_neox_config(const std::filesystem::path& path, const std::string& name) {
  std::filesystem::path file;
  const nlohmann::json doc = read_json_object(path, &file);
  const KeyReader keys(doc, file);
  const std::string type = keys.model_type("");
  if (type != "gpt_neox") throw keys.error("model_type", "is '" + type + "', not 'gpt_neox'");
  NeoxConfig c;
  c.name = name;
  c.hidden = keys.positive_int("hidden_size");
  c.heads = keys.positive_int("num_attention_heads");
  c.layers = keys.positive_int("num_hidden_layers");
  c.ffn = keys.positive_int("intermediate_size");
  c.vocab = keys.positive_int("vocab_size");
  c.max_positions = keys.positive_int("max_position_embeddings");
  if (c.hidden % c.heads != 0) {
    throw keys.error("num_attention_heads",
                     detail::concat("(", c.heads, ") must divide hidden_size (", c.hidden, ")"));
  }
  if (c.head_dim() > kMaxHeadDim) {
    throw keys.error("num_attention_heads",
                     detail::concat("gives head_dim ", c.head_dim(), "; at most ", kMaxHeadDim));
  }
  // transformers 5 names the rotated share partial_rotary_factor (possibly inside
  // rope_parameters); older configs say rotary_pct.
  const char* pct_key = keys.has("partial_rotary_factor") ? "partial_rotary_factor" : "rotary_pct";
  if (keys.has(pct_key)) c.rotary_pct = keys.number_in(pct_key, 0, 1);
  if (keys.has("rope_parameters")) {
    const KeyReader r = keys.object("rope_parameters");
    if (r.has("partial_rotary_factor")) c.rotary_pct = r.number_in("partial_rotary_factor", 0, 1);
  }
  if (c.rot_dim() % 2 != 0) {
    throw keys.error(pct_key, detail::concat("gives ", c.rot_dim(),
                                             " rotated dimensions per head; it must be even"));
  }
  const RopeConfig rope =
      read_rope(keys, keys.has("rope_theta") ? "rope_theta" : "rotary_emb_base", 10000);
  c.rope_theta = rope.theta;
  c.rope_scaling = rope.scaling;
  keys.optional_bool("use_parallel_residual", c.parallel_residual);
  keys.optional_bool("attention_bias", c.attention_bias);
  keys.optional_bool("tie_word_embeddings", c.tied_embeddings);
  if (c.tied_embeddings) {
    throw keys.error("tie_word_embeddings", "is true; GPT-NeoX with a tied head is not supported");
  }
  double eps = 1e-5;
  keys.optional_positive_number("layer_norm_eps", eps);
  c.layer_norm_eps = static_cast<float>(eps);
  std::string act = "gelu";
  keys.optional_string("hidden_act", act);
  if (act != "gelu") {
    throw keys.error("hidden_act", "is '" + act + "'; only 'gelu' (exact) is supported");
  }
  keys.optional_token_id("bos_token_id", c.bos_id);
  keys.optional_token_id("eos_token_id", c.eos_id);
  c.pad_id = c.eos_id;
  keys.optional_token_id("pad_token_id", c.pad_id);
  keys.checkpoint_dtype();
  return c;
}

}  // namespace h2oflex
