#include "models/llama/llama_config.h"

#include <charconv>
#include <map>

#include "models/family_parts.h"
#include "models/loaders/hf_json.h"

namespace h2oflex {

namespace {

LlamaConfig shape(const char* name, const char* type, int64_t hidden, int64_t heads,
                  int64_t kv_heads, int64_t layers, int64_t ffn, int64_t vocab,
                  int64_t max_positions, double theta) {
  LlamaConfig c;
  c.name = name;
  c.model_type = type;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.layers = layers;
  c.ffn = ffn;
  c.vocab = vocab;
  c.max_positions = max_positions;
  c.rope_theta = theta;
  return c;
}

std::vector<LlamaConfig> published() {
  std::vector<LlamaConfig> v;
  v.push_back(shape("llama-2-7b", "llama", 4096, 32, 32, 32, 11008, 32000, 4096, 1e4));
  v.push_back(shape("llama-2-13b", "llama", 5120, 40, 40, 40, 13824, 32000, 4096, 1e4));
  v.push_back(shape("llama-2-70b", "llama", 8192, 64, 8, 80, 28672, 32000, 4096, 1e4));
  for (const char* n : {"llama-3-8b", "llama-3-70b"}) {
    const bool big = std::string(n) == "llama-3-70b";
    LlamaConfig c = big ? shape(n, "llama", 8192, 64, 8, 80, 28672, 128256, 8192, 5e5)
                        : shape(n, "llama", 4096, 32, 8, 32, 14336, 128256, 8192, 5e5);
    c.bos_id = 128000, c.eos_id = 128001, c.pad_id = 128001;
    v.push_back(c);
  }
  LlamaConfig small = shape("llama-3.2-1b", "llama", 2048, 32, 8, 16, 8192, 128256, 131072, 5e5);
  small.head_dim = 64;
  small.tied_embeddings = true;
  small.rope_scaling = {RopeScaling::Type::Llama3, 32, 1, 4, 8192};
  small.bos_id = 128000, small.eos_id = 128001, small.pad_id = 128001;
  v.push_back(small);
  LlamaConfig mistral = shape("mistral-7b", "mistral", 4096, 32, 8, 32, 14336, 32000, 32768, 1e4);
  v.push_back(mistral);
  LlamaConfig qwen = shape("qwen2-7b", "qwen2", 3584, 28, 4, 28, 18944, 152064, 32768, 1e6);
  qwen.qkv_bias = true;
  qwen.rms_norm_eps = 1e-6f;
  qwen.bos_id = 151643, qwen.eos_id = 151643, qwen.pad_id = 151643;
  v.push_back(qwen);
  return v;
}

}  // namespace

std::optional<LlamaConfig> llama_config_by_name(const std::string& name) {
  const std::string n = family::published_name_key(name);
  for (const LlamaConfig& c : published()) {
    if (c.name == n) return c;
  }
  return std::nullopt;
}

std::vector<std::string> llama_model_names() {
  std::vector<std::string> names;
  for (const LlamaConfig& c : published()) names.push_back(c.name);
  return names;
}

LlamaConfig read_hf_llama_config(const std::filesystem::path& path, const std::string& name) {
  std::filesystem::path file;
  const nlohmann::json doc = read_json_object(path, &file);
  const KeyReader keys(doc, file);
  LlamaConfig c;
  c.name = name;
  c.model_type = keys.model_type("");
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2") {
    throw keys.error("model_type", "is '" + c.model_type + "'; expected llama, mistral or qwen2");
  }
  c.hidden = keys.positive_int("hidden_size");
  c.heads = keys.positive_int("num_attention_heads");
  c.layers = keys.positive_int("num_hidden_layers");
  c.ffn = keys.positive_int("intermediate_size");
  c.vocab = keys.positive_int("vocab_size");
  c.max_positions = keys.positive_int("max_position_embeddings");
  c.kv_heads = c.heads;
  keys.optional_positive_int("num_key_value_heads", c.kv_heads);
  if (c.heads % c.kv_heads != 0) {
    throw keys.error(
        "num_key_value_heads",
        detail::concat("(", c.kv_heads, ") must divide num_attention_heads (", c.heads, ")"));
  }
  if (keys.has("head_dim")) {
    c.head_dim = keys.positive_int("head_dim");
  } else {
    if (c.hidden % c.heads != 0) {
      throw keys.error("num_attention_heads",
                       detail::concat("(", c.heads, ") must divide hidden_size (", c.hidden,
                                      ") when head_dim is not given"));
    }
    c.head_dim = c.hidden / c.heads;
  }
  if (c.head_dim % 2 != 0 || c.head_dim > kMaxHeadDim) {
    throw keys.error(keys.has("head_dim") ? "head_dim" : "num_attention_heads",
                     detail::concat("gives head_dim ", c.head_dim,
                                    "; it must be even (rotary pairs "
                                    "dimensions) and at most ",
                                    kMaxHeadDim));
  }
  double eps = 1e-6;
  keys.optional_positive_number("rms_norm_eps", eps);
  c.rms_norm_eps = static_cast<float>(eps);
  const RopeConfig rope = read_rope(keys, "rope_theta", 10000);
  c.rope_theta = rope.theta;
  c.rope_scaling = rope.scaling;
  // Qwen2 ties nothing by default and always has q/k/v biases; Llama and Mistral default to
  // untied, bias-free projections.
  keys.optional_bool("tie_word_embeddings", c.tied_embeddings);
  c.qkv_bias = c.model_type == "qwen2";
  keys.optional_bool("attention_bias", c.qkv_bias);
  bool flag = false;
  keys.optional_bool("mlp_bias", flag);
  if (flag) throw keys.error("mlp_bias", "is true; MLP biases are not supported");
  std::string act = "silu";
  keys.optional_string("hidden_act", act);
  if (act != "silu") throw keys.error("hidden_act", "is '" + act + "'; only 'silu' is supported");
  // A sliding window limits what each token attends to; ignoring it would give other results
  // than the model's own past the window, so it is refused until implemented. Qwen2 carries a
  // window size that only applies with use_sliding_window.
  bool sliding = keys.has("sliding_window");
  if (c.model_type == "qwen2") {
    sliding = false;
    keys.optional_bool("use_sliding_window", sliding);
    if (sliding) {
      throw keys.error("use_sliding_window", "is true; sliding-window attention is not supported");
    }
  }
  if (sliding) {
    throw keys.error("sliding_window",
                     "is " + keys.raw("sliding_window").dump() +
                         "; sliding-window attention is not supported (set it to null only if "
                         "prompt + generation stay within the window)");
  }
  keys.optional_token_id("bos_token_id", c.bos_id);
  if (keys.has("eos_token_id") && keys.raw("eos_token_id").is_array()) {
    // Llama-3 instruct configs list several stop ids; the first is the model's EOS.
    const auto& ids = keys.raw("eos_token_id");
    if (ids.empty() || !ids[0].is_number_integer() || ids[0].get<int64_t>() < 0) {
      throw keys.error("eos_token_id", "must be a token id or a non-empty list of token ids");
    }
    c.eos_id = ids[0].get<int32_t>();
  } else {
    keys.optional_token_id("eos_token_id", c.eos_id);
  }
  c.pad_id = c.eos_id;
  keys.optional_token_id("pad_token_id", c.pad_id);
  keys.checkpoint_dtype();  // validated; the reader takes each tensor's own dtype
  return c;
}

nlohmann::json hf_llama_config_json(const LlamaConfig& c) {
  H2OFLEX_CHECK(c.rope_scaling.type == RopeScaling::Type::None,
                "only configs without rope scaling are written");
  char eps[32];
  const auto end = std::to_chars(eps, eps + sizeof eps, c.rms_norm_eps).ptr;
  static const std::map<std::string, std::string> kArchitecture = {
      {"llama", "LlamaForCausalLM"},
      {"mistral", "MistralForCausalLM"},
      {"qwen2", "Qwen2ForCausalLM"}};
  return {{"architectures", {kArchitecture.at(c.model_type)}},
          {"model_type", c.model_type},
          {"hidden_size", c.hidden},
          {"intermediate_size", c.ffn},
          {"num_hidden_layers", c.layers},
          {"num_attention_heads", c.heads},
          {"num_key_value_heads", c.kv_heads},
          {"head_dim", c.head_dim},
          {"hidden_act", "silu"},
          {"max_position_embeddings", c.max_positions},
          {"rms_norm_eps", std::stod(std::string(eps, end))},
          {"rope_theta", c.rope_theta},
          {"rope_scaling", nullptr},
          {"vocab_size", c.vocab},
          {"tie_word_embeddings", c.tied_embeddings},
          {"attention_bias", c.qkv_bias},
          {"mlp_bias", false},
          {"bos_token_id", c.bos_id},
          {"eos_token_id", c.eos_id},
          {"pad_token_id", c.pad_id}};
}

}  // namespace h2oflex
