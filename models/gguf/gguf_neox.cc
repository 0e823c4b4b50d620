#include "models/gguf/gguf_neox.h"

#include <cstring>
#include <vector>

#include "models/gguf/gguf_metadata.h"
#include "runtime/core/error.h"
#include "runtime/core/half.h"
#include "runtime/core/quote.h"

namespace h2oflex {
namespace {

constexpr const char* kPrefix = "gptneox.";

// Engine (HF) names, without the layer prefix, and llama.cpp's.
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"input_layernorm", "attn_norm"},   {"attention.query_key_value", "attn_qkv"},
    {"attention.dense", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
    {"mlp.dense_h_to_4h", "ffn_up"},    {"mlp.dense_4h_to_h", "ffn_down"},
};
constexpr std::pair<const char*, const char*> kTopNames[] = {
    {"gpt_neox.embed_in.weight", "token_embd.weight"},
    {"gpt_neox.final_layer_norm.weight", "output_norm.weight"},
    {"gpt_neox.final_layer_norm.bias", "output_norm.bias"},
    {"embed_out.weight", "output.weight"},
};

void store(const float* values, DType dtype, void* dst, size_t n) {
  if (dtype == DType::F32) {
    std::memcpy(dst, values, n * sizeof(float));
  } else if (dtype == DType::F16) {
    convert_f32_to_f16(values, static_cast<uint16_t*>(dst), n);
  } else {
    convert_f32_to_bf16(values, static_cast<uint16_t*>(dst), n);
  }
}

}  // namespace

NeoxConfig gguf_neox_config(const GgufFile& f, const std::string& name) {
  const std::string p = kPrefix;
  NeoxConfig c;
  c.name = name;
  c.hidden = gguf_positive(f, p + "embedding_length");
  c.layers = gguf_positive(f, p + "block_count");
  c.ffn = gguf_positive(f, p + "feed_forward_length");
  c.heads = gguf_positive(f, p + "attention.head_count");
  c.max_positions = gguf_positive(f, p + "context_length");
  if (f.find(p + "attention.head_count_kv") &&
      gguf_positive(f, p + "attention.head_count_kv") != c.heads) {
    f.key_error(p + "attention.head_count_kv",
                "differs from the head count; GPT-NeoX has as many key/value heads as heads");
  }
  if (c.hidden % c.heads != 0) {
    f.key_error(p + "attention.head_count", detail::concat("(", c.heads, ") must divide ", p,
                                                           "embedding_length (", c.hidden, ")"));
  }
  if (c.head_dim() > kMaxHeadDim) {
    f.key_error(p + "attention.head_count",
                detail::concat("gives head_dim ", c.head_dim(), "; at most ", kMaxHeadDim));
  }
  // llama.cpp rotates the whole head when the count is absent.
  const int64_t rot = f.find(p + "rope.dimension_count")
                          ? static_cast<int64_t>(f.uint(p + "rope.dimension_count"))
                          : c.head_dim();
  c.rotary_pct = static_cast<double>(rot) / static_cast<double>(c.head_dim());
  if (rot % 2 != 0 || rot > c.head_dim() || c.rot_dim() != rot) {
    f.key_error(
        p + "rope.dimension_count",
        detail::concat("is ", rot, "; it must be even and at most the head dim ", c.head_dim()));
  }
  c.rope_theta = f.find(p + "rope.freq_base") ? f.number(p + "rope.freq_base") : 10000.0;
  if (!(c.rope_theta > 0)) f.key_error(p + "rope.freq_base", "must be > 0");
  gguf_refuse_rope_scaling(f, p);
  c.parallel_residual = f.boolean(p + "use_parallel_residual");
  c.layer_norm_eps = static_cast<float>(f.number(p + "attention.layer_norm_epsilon"));
  if (!(c.layer_norm_eps > 0)) f.key_error(p + "attention.layer_norm_epsilon", "must be > 0");
  // HF's attention_bias covers the fused projection and the output's bias alike.
  c.attention_bias = f.find_tensor("blk.0.attn_qkv.bias") != nullptr;
  if (f.find_tensor("output.weight") == nullptr) {
    throw InputError(f.where(
        "tensor 'output.weight' (the LM head) is missing: a GPT-NeoX model with its head tied to "
        "the token embedding is not supported"));
  }
  c.vocab = gguf_vocab(f);
  c.bos_id = gguf_token_id(f, "bos", c.vocab, 0);
  c.eos_id = gguf_token_id(f, "eos", c.vocab, 0);
  c.pad_id = gguf_token_id(f, "padding", c.vocab, c.eos_id);
  return c;
}

std::string gguf_neox_tensor_name(const std::string& spec_name) {
  for (const auto& [ours, theirs] : kTopNames) {
    if (spec_name == ours) return theirs;
  }
  // "gpt_neox.layers.N.<part>.<weight|bias>"
  const std::string prefix = "gpt_neox.layers.";
  const size_t dot = spec_name.find('.', prefix.size());
  const size_t last = spec_name.rfind('.');
  if (spec_name.starts_with(prefix) && dot != std::string::npos && last > dot) {
    const std::string part = spec_name.substr(dot + 1, last - dot - 1);
    for (const auto& [ours, theirs] : kLayerNames) {
      if (part == ours) {
        return "blk." + spec_name.substr(prefix.size(), dot - prefix.size()) + "." + theirs +
               spec_name.substr(last);
      }
    }
  }
  throw InternalError("no GGUF name for weight spec " + spec_name);
}

bool is_gguf_neox_qkv(const std::string& gguf_name) {
  return gguf_name.ends_with(".attn_qkv.weight") || gguf_name.ends_with(".attn_qkv.bias");
}

void read_gguf_neox_qkv(const GgufFile& file, const GgufTensorInfo& t, int64_t heads, DType dtype,
                        void* dst) {
  H2OFLEX_CHECK(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16,
                "GGUF weights cannot be stored as ", dtype_name(dtype));
  const size_t elem = dtype == DType::F32 ? 4 : 2;
  if (t.dims.size() == 1) {  // the bias: a few values, regrouped in memory
    std::vector<float> values(static_cast<size_t>(t.numel()));
    file.read_f32(t, values.data());
    regroup_gguf_neox_qkv(values.data(), static_cast<int64_t>(values.size()), sizeof(float), heads);
    store(values.data(), dtype, dst, values.size());
    return;
  }
  const uint64_t cols = t.dims[0];
  const uint64_t rows = t.numel() / cols;  // 3 * hidden
  const uint64_t head_rows = rows / 3 / static_cast<uint64_t>(heads);
  std::vector<float> staging(static_cast<size_t>(head_rows * cols));
  for (uint64_t part = 0; part < 3; ++part) {
    for (uint64_t h = 0; h < static_cast<uint64_t>(heads); ++h) {
      const uint64_t from = (part * static_cast<uint64_t>(heads) + h) * head_rows;
      const uint64_t to = (h * 3 + part) * head_rows;
      file.read_f32_rows(t, from, head_rows, staging.data());
      store(staging.data(), dtype, static_cast<uint8_t*>(dst) + to * cols * elem, staging.size());
    }
  }
}

void regroup_gguf_neox_qkv(void* data, int64_t rows, size_t row_bytes, int64_t heads) {
  const auto head_bytes = static_cast<size_t>(rows / 3 / heads) * row_bytes;
  auto* bytes = static_cast<uint8_t*>(data);
  const std::vector<uint8_t> stored(bytes, bytes + static_cast<size_t>(rows) * row_bytes);
  for (int64_t part = 0; part < 3; ++part) {
    for (int64_t h = 0; h < heads; ++h) {
      std::memcpy(bytes + static_cast<size_t>(h * 3 + part) * head_bytes,
                  stored.data() + static_cast<size_t>(part * heads + h) * head_bytes, head_bytes);
    }
  }
}

nlohmann::json hf_neox_config_json(const NeoxConfig& c) {
  H2OFLEX_CHECK(c.rope_scaling.type == RopeScaling::Type::None,
                "only configs without rope scaling are written");
  return {{"architectures", {"GPTNeoXForCausalLM"}},
          {"model_type", "gpt_neox"},
          {"hidden_size", c.hidden},
          {"intermediate_size", c.ffn},
          {"num_hidden_layers", c.layers},
          {"num_attention_heads", c.heads},
          {"hidden_act", "gelu"},
          {"max_position_embeddings", c.max_positions},
          {"rotary_pct", c.rotary_pct},
          {"rotary_emb_base", c.rope_theta},
          {"use_parallel_residual", c.parallel_residual},
          {"attention_bias", c.attention_bias},
          {"layer_norm_eps", static_cast<double>(c.layer_norm_eps)},
          {"vocab_size", c.vocab},
          {"tie_word_embeddings", false},
          {"bos_token_id", c.bos_id},
          {"eos_token_id", c.eos_id},
          {"pad_token_id", c.pad_id}};
}

}  // namespace h2oflex
