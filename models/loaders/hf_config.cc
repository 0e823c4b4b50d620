#include "models/loaders/hf_config.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads keys out of one config object, naming the file and key in every error.
class KeyReader {
 public:
  KeyReader(const json& doc, const fs::path& file) : doc_(doc), file_(file) {}

  bool has(const char* key) const { return doc_.contains(key) && !doc_[key].is_null(); }

  InputError error(const char* key, std::string_view why) const {
    return InputError(detail::concat("'", file_.string(), "': key \"", key, "\" ", why));
  }

  int64_t positive_int(const char* key) const {
    if (!has(key)) throw error(key, "is missing");
    const json& v = doc_[key];
    if (!v.is_number_integer()) throw error(key, "must be an integer, got " + v.dump());
    const int64_t n = v.get<int64_t>();
    if (n <= 0) throw error(key, "must be positive, got " + v.dump());
    return n;
  }

  void optional_positive_int(const char* key, int64_t& out) const {
    if (has(key)) out = positive_int(key);
  }

  void optional_token_id(const char* key, int32_t& out) const {
    if (!has(key)) return;
    const json& v = doc_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      throw error(key, "must be a non-negative integer token id, got " + v.dump());
    }
    out = v.get<int32_t>();
  }

  void optional_bool(const char* key, bool& out) const {
    if (!has(key)) return;
    if (!doc_[key].is_boolean()) throw error(key, "must be true or false, got " + doc_[key].dump());
    out = doc_[key].get<bool>();
  }

  void optional_string(const char* key, std::string& out) const {
    if (!has(key)) return;
    if (!doc_[key].is_string()) throw error(key, "must be a string, got " + doc_[key].dump());
    out = doc_[key].get<std::string>();
  }

 private:
  const json& doc_;
  const fs::path& file_;
};

}  // namespace

HfOptConfig read_hf_opt_config(const fs::path& path) {
  const fs::path file = fs::is_directory(path) ? path / "config.json" : path;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(detail::concat("'", file.string(), "': cannot open config"));
  std::ostringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::exception& e) {
    throw InputError(detail::concat("'", file.string(), "': malformed JSON: ", e.what()));
  }
  if (!doc.is_object()) {
    throw InputError(detail::concat("'", file.string(), "': config is not a JSON object"));
  }
  const KeyReader keys(doc, file);

  std::string model_type = "opt";
  keys.optional_string("model_type", model_type);
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
  // transformers 5 writes "dtype"; older versions wrote "torch_dtype".
  const char* dtype_key = keys.has("torch_dtype") ? "torch_dtype" : "dtype";
  keys.optional_string(dtype_key, c.torch_dtype);

  if (c.hidden_size % c.num_attention_heads != 0) {
    throw keys.error("num_attention_heads",
                     detail::concat("(", c.num_attention_heads, ") must divide hidden_size (",
                                    c.hidden_size, ")"));
  }
  if (c.activation_function != "relu") {
    throw keys.error("activation_function",
                     "is '" + c.activation_function + "'; only 'relu' (OPT's) is supported");
  }
  if (!c.torch_dtype.empty() && c.torch_dtype != "float32" && c.torch_dtype != "float16" &&
      c.torch_dtype != "bfloat16") {
    throw keys.error(dtype_key,
                     "is '" + c.torch_dtype + "'; expected float32, float16 or bfloat16");
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
