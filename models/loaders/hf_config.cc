#include "models/loaders/hf_config.h"

#include "models/loaders/hf_json.h"

namespace h2oflex {

namespace fs = std::filesystem;

HfOptConfig read_hf_opt_config(const fs::path& path) {
  fs::path file;
  const nlohmann::json doc = read_json_object(path, &file);
  const KeyReader keys(doc, file);

  const std::string model_type = keys.model_type("opt");
  if (model_type != "opt") throw keys.error("model_type", "is '" + model_type + "', not 'opt'");

  HfOptConfig c;
  c.hidden_size = keys.positive_int("hidden_size");
  c.num_attention_heads = keys.positive_int("num_attention_heads");
  c.num_hidden_layers = keys.positive_int("num_hidden_layers");
  c.ffn_dim = keys.positive_int("ffn_dim");
  c.vocab_size = keys.positive_int("vocab_size");
  c.max_position_embeddings = keys.positive_int("max_position_embeddings");
  c.word_embed_proj_dim = c.hidden_size;
  keys.optional_positive_int("word_embed_proj_dim", c.word_embed_proj_dim);
  keys.optional_bool("do_layer_norm_before", c.do_layer_norm_before);
  keys.optional_string("activation_function", c.activation_function);
  keys.optional_token_id("pad_token_id", c.pad_token_id);
  keys.optional_token_id("bos_token_id", c.bos_token_id);
  keys.optional_token_id("eos_token_id", c.eos_token_id);
  c.torch_dtype = keys.checkpoint_dtype();

  if (c.hidden_size % c.num_attention_heads != 0) {
    throw keys.error("num_attention_heads",
                     detail::concat("(", c.num_attention_heads, ") must divide hidden_size (",
                                    c.hidden_size, ")"));
  }
  if (c.activation_function != "relu") {
    throw keys.error("activation_function",
                     "is '" + c.activation_function + "'; only 'relu' (OPT's) is supported");
  }
  // Variants of the architecture this engine does not implement.
  bool flag = true;
  keys.optional_bool("enable_bias", flag);
  if (!flag) throw keys.error("enable_bias", "is false; OPT without biases is not supported");
  flag = true;
  keys.optional_bool("layer_norm_elementwise_affine", flag);
  if (!flag) {
    throw keys.error("layer_norm_elementwise_affine",
                     "is false; LayerNorm without weight and bias is not supported");
  }
  flag = false;
  keys.optional_bool("_remove_final_layer_norm", flag);
  if (flag && c.do_layer_norm_before) {
    throw keys.error("_remove_final_layer_norm",
                     "is true; pre-LayerNorm OPT without the final LayerNorm is not supported");
  }
  return c;
}

OptConfig to_opt_config(const HfOptConfig& hf, const std::string& name) {
  OptConfig c;
  c.name = name;
  c.hidden = hf.hidden_size;
  c.heads = hf.num_attention_heads;
  c.layers = hf.num_hidden_layers;
  c.ffn = hf.ffn_dim;
  c.vocab = hf.vocab_size;
  c.max_positions = hf.max_position_embeddings;
  c.word_embed_dim = hf.word_embed_proj_dim;
  c.pre_layer_norm = hf.do_layer_norm_before;
  c.bos_id = hf.bos_token_id;
  c.eos_id = hf.eos_token_id;
  c.pad_id = hf.pad_token_id;
  return c;
}

}  // namespace h2oflex
