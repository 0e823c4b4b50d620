#include "models/gguf/gguf_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "models/gguf/gguf_metadata.h"
#include "models/gguf/gguf_neox.h"
#include "models/gguf/gguf_tokenizer.h"
#include "models/llama/llama_model.h"
#include "runtime/core/error.h"
#include "runtime/core/half.h"
#include "runtime/core/quote.h"

namespace h2oflex {
namespace {

// Values unpacked per step of GgufCheckpoint::read (16 MiB of f32).
constexpr uint64_t kChunkValues = uint64_t{1} << 22;

// The LLaMA family's tensor names (models/llama, without the layer prefix) and llama.cpp's.
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr std::pair<const char*, const char*> kTopNames[] = {
    {"embed_tokens.weight", "token_embd.weight"},
    {"norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

std::string gguf_tensor_name(const std::string& spec_name) {
  for (const auto& [ours, theirs] : kTopNames) {
    if (spec_name == ours) return theirs;
  }
  // "layers.N.rest"
  const size_t dot = spec_name.find('.', 7);
  const std::string layer = spec_name.substr(7, dot - 7);
  const std::string rest = spec_name.substr(dot + 1);
  for (const auto& [ours, theirs] : kLayerNames) {
    if (rest == ours) return "blk." + layer + "." + theirs;
  }
  throw InternalError("no GGUF name for weight spec " + spec_name);
}

// The architectures that run as the LLaMA family, and whether llama.cpp's converter permuted
// their q / k rows (its LlamaModel does; Qwen2Model does not).
struct Architecture {
  const char* name;
  const char* model_type;
  bool permuted_qk;
  bool qkv_bias;
};
constexpr Architecture kArchitectures[] = {
    {"llama", "llama", true, false},
    {"qwen2", "qwen2", false, true},
};

// The shared rule (models/gguf/gguf_metadata), under this file's short name.
constexpr auto positive = gguf_positive;

LlamaConfig llama_config(const GgufFile& f, const Architecture& arch, const std::string& name) {
  const std::string p = std::string(arch.name) + ".";
  LlamaConfig c;
  c.name = name;
  c.model_type = arch.model_type;
  c.hidden = positive(f, p + "embedding_length");
  c.layers = positive(f, p + "block_count");
  c.ffn = positive(f, p + "feed_forward_length");
  c.heads = positive(f, p + "attention.head_count");
  c.kv_heads =
      f.find(p + "attention.head_count_kv") ? positive(f, p + "attention.head_count_kv") : c.heads;
  if (c.heads % c.kv_heads != 0) {
    f.key_error(p + "attention.head_count_kv",
                detail::concat("(", c.kv_heads, ") must divide ", p, "attention.head_count (",
                               c.heads, ")"));
  }
  if (f.find(p + "attention.key_length")) {
    c.head_dim = positive(f, p + "attention.key_length");
  } else {
    if (c.hidden % c.heads != 0) {
      f.key_error(p + "attention.head_count",
                  detail::concat("(", c.heads, ") must divide ", p, "embedding_length (", c.hidden,
                                 ") when ", p, "attention.key_length is absent"));
    }
    c.head_dim = c.hidden / c.heads;
  }
  if (f.find(p + "attention.value_length") &&
      positive(f, p + "attention.value_length") != c.head_dim) {
    f.key_error(p + "attention.value_length", "differs from the key length; not supported");
  }
  if (c.head_dim % 2 != 0 || c.head_dim > kMaxHeadDim) {
    f.key_error(p + "attention.head_count",
                detail::concat("gives head_dim ", c.head_dim, "; it must be even and at most ",
                               kMaxHeadDim));
  }
  if (f.find(p + "rope.dimension_count") && positive(f, p + "rope.dimension_count") != c.head_dim) {
    f.key_error(p + "rope.dimension_count",
                detail::concat("is not the head dim ", c.head_dim,
                               " (partial rotary is not supported for this family)"));
  }
  c.max_positions = positive(f, p + "context_length");
  c.rms_norm_eps = static_cast<float>(f.number(p + "attention.layer_norm_rms_epsilon"));
  if (!(c.rms_norm_eps > 0)) f.key_error(p + "attention.layer_norm_rms_epsilon", "must be > 0");
  c.rope_theta = f.find(p + "rope.freq_base") ? f.number(p + "rope.freq_base") : 10000.0;
  if (!(c.rope_theta > 0)) f.key_error(p + "rope.freq_base", "must be > 0");
  gguf_refuse_rope_scaling(f, p);
  if (f.find(p + "attention.sliding_window")) {
    f.key_error(p + "attention.sliding_window",
                "is given; sliding-window attention is not supported");
  }
  c.qkv_bias = arch.qkv_bias;
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  c.vocab = gguf_vocab(f);
  c.bos_id = gguf_token_id(f, "bos", c.vocab, 1);
  c.eos_id = gguf_token_id(f, "eos", c.vocab, 2);
  c.pad_id = gguf_token_id(f, "padding", c.vocab, c.eos_id);
  return c;
}

// llama.cpp stores row (head h, pair i, half p) of a permuted projection where the Hugging Face
// layout has row (head h, half p, pair i): its rotary pairs adjacent dimensions, HF's pairs the
// two halves. Undone per head on rows of `cols` values.
template <typename T>
void unpermute_rows(T* data, int64_t rows, int64_t cols, int64_t heads) {
  const int64_t head_rows = rows / heads, half = head_rows / 2;
  std::vector<T> head(static_cast<size_t>(head_rows * cols));
  for (int64_t h = 0; h < heads; ++h) {
    T* base = data + h * head_rows * cols;
    std::memcpy(head.data(), base, head.size() * sizeof(T));
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t part = 0; part < 2; ++part) {
        std::memcpy(base + (part * half + i) * cols, head.data() + (2 * i + part) * cols,
                    static_cast<size_t>(cols) * sizeof(T));
      }
    }
  }
}

}  // namespace

bool is_gguf_path(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return ext == ".gguf";
}

std::shared_ptr<const GgufCheckpoint> GgufCheckpoint::open(const std::filesystem::path& path) {
  std::shared_ptr<GgufCheckpoint> ckpt(new GgufCheckpoint(GgufFile::open(path)));
  const GgufFile& f = ckpt->file_;
  const std::string arch_name = f.string("general.architecture");
  const bool neox = arch_name == "gptneox";
  const Architecture* arch = nullptr;
  for (const Architecture& a : kArchitectures) {
    if (arch_name == a.name) arch = &a;
  }
  if (arch == nullptr && !neox) {
    f.key_error("general.architecture",
                "is '" + arch_name + "'; implemented: llama (Llama, Mistral), qwen2, gptneox");
  }
  std::shared_ptr<DecoderModel> model;
  int64_t heads = 0, kv_heads = 0;
  if (neox) {
    auto m = std::make_shared<NeoxModel>(gguf_neox_config(f, path.stem().string()));
    heads = kv_heads = m->config().heads;
    model = m;
  } else {
    auto m = std::make_shared<LlamaModel>(llama_config(f, *arch, path.stem().string()));
    heads = m->config().heads;
    kv_heads = m->config().kv_heads;
    model = m;
  }
  ckpt->model_ = model;

  std::set<std::string> used;
  std::vector<PackedFormat> sources;
  for (const WeightSpec& spec : model->weight_specs()) {
    const std::string name = neox ? gguf_neox_tensor_name(spec.name) : gguf_tensor_name(spec.name);
    const GgufTensorInfo* t = f.find_tensor(name);
    if (t == nullptr) {
      throw InputError(f.where(detail::concat("tensor '", name, "' is missing (the metadata says ",
                                              model->layers(), " layers)")));
    }
    if (t->shape() != spec.shape) {
      throw InputError(f.where(detail::concat("tensor '", name, "' (info at byte offset ",
                                              t->info_offset, ") has shape ", shape_str(t->shape()),
                                              "; the metadata implies ", shape_str(spec.shape))));
    }
    require_unpackable(f, *t);
    Source s{t, 0};
    if (neox && is_gguf_neox_qkv(name)) s.qkv_heads = heads;
    if (arch != nullptr && arch->permuted_qk) {
      if (name.ends_with(".attn_q.weight") || name.ends_with(".attn_q.bias"))
        s.permuted_heads = heads;
      if (name.ends_with(".attn_k.weight") || name.ends_with(".attn_k.bias"))
        s.permuted_heads = kv_heads;
    }
    ckpt->sources_[spec.name] = s;
    used.insert(name);
    // A tensor in a packed format the engine computes on is kept in it (weight_format: stored).
    const PackedFormatRow* packed = packed_format_by_ggml_name(t->format->name);
    sources.push_back(packed ? packed->id : PackedFormat::None);
  }
  model->set_weight_sources(std::move(sources));
  std::vector<std::string> extra;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (used.count(t.name) == 0) extra.push_back(t.name);
  }
  if (!extra.empty()) {
    std::string names;
    for (size_t i = 0; i < extra.size() && i < 6; ++i) names += (i ? ", '" : "'") + extra[i] + "'";
    if (extra.size() > 6) names += detail::concat(" and ", extra.size() - 6, " more");
    throw InputError(f.where(
        detail::concat("holds ", extra.size(), " tensor(s) the ", arch_name,
                       " model of its metadata (", model->layers(), " layers) does not use (",
                       names, "); refusing to run a model that differs from the file")));
  }
  return ckpt;
}

const GgufTensorInfo& GgufCheckpoint::tensor_of(const WeightSpec& spec) const {
  const auto it = sources_.find(spec.name);
  if (it == sources_.end()) throw InternalError("no GGUF tensor for weight spec " + spec.name);
  return *it->second.tensor;
}

void GgufCheckpoint::read(const WeightSpec& spec, DType dtype, void* dst) const {
  const auto it = sources_.find(spec.name);
  if (it == sources_.end()) throw InternalError("no GGUF tensor for weight spec " + spec.name);
  const Source& s = it->second;
  if (s.qkv_heads > 0) return read_gguf_neox_qkv(file_, *s.tensor, s.qkv_heads, dtype, dst);
  H2OFLEX_CHECK(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16,
                "GGUF weights cannot be stored as ", dtype_name(dtype));
  // Rows in chunks of about 4M values (whole heads where rows are permuted per head), so the
  // RAM beyond `dst` stays bounded when the stored dtype is not f32.
  const uint64_t cols = s.tensor->dims[0];
  const uint64_t rows = s.tensor->numel() / cols;
  const uint64_t unit =
      s.permuted_heads > 0 ? rows / static_cast<uint64_t>(s.permuted_heads) : uint64_t{1};
  const uint64_t chunk_rows = std::max<uint64_t>(1, kChunkValues / (cols * unit)) * unit;
  std::vector<float> staging;
  if (dtype != DType::F32) staging.resize(static_cast<size_t>(std::min(rows, chunk_rows) * cols));
  for (uint64_t first = 0; first < rows; first += chunk_rows) {
    const uint64_t count = std::min(chunk_rows, rows - first);
    const size_t n = static_cast<size_t>(count * cols);
    float* values = dtype == DType::F32 ? static_cast<float*>(dst) + first * cols : staging.data();
    file_.read_f32_rows(*s.tensor, first, count, values);
    if (s.permuted_heads > 0) {
      unpermute_rows(values, static_cast<int64_t>(count), static_cast<int64_t>(cols),
                     static_cast<int64_t>(count / unit));
    }
    if (dtype == DType::F16) {
      convert_f32_to_f16(values, static_cast<uint16_t*>(dst) + first * cols, n);
    } else if (dtype == DType::BF16) {
      convert_f32_to_bf16(values, static_cast<uint16_t*>(dst) + first * cols, n);
    }
  }
}

std::shared_ptr<const DecoderModel> GgufCheckpoint::shape_model() const {
  std::shared_ptr<DecoderModel> copy;
  if (const auto* neox = dynamic_cast<const NeoxModel*>(model_.get())) {
    copy = std::make_shared<NeoxModel>(*neox);
  } else {
    copy = std::make_shared<LlamaModel>(static_cast<const LlamaModel&>(*model_));
  }
  copy->set_weight_sources({});
  return copy;
}

void GgufCheckpoint::read_packed(const WeightSpec& spec, PackedFormat format, void* dst) const {
  const auto it = sources_.find(spec.name);
  if (it == sources_.end()) throw InternalError("no GGUF tensor for weight spec " + spec.name);
  const Source& s = it->second;
  const PackedFormatRow* row = packed_format_by_ggml_name(s.tensor->format->name);
  H2OFLEX_CHECK(row != nullptr && row->id == format, "GGUF tensor '", s.tensor->name, "' is ",
                s.tensor->format->name, ", not ", packed_format_row(format).name);
  file_.read_raw(*s.tensor, dst);
  if (s.permuted_heads > 0) {
    // Rows are whole blocks, so the permutation moves packed rows as it moves value rows.
    const auto cols = static_cast<int64_t>(row->row_bytes(static_cast<int64_t>(s.tensor->dims[0])));
    const auto rows = static_cast<int64_t>(s.tensor->numel() / s.tensor->dims[0]);
    unpermute_rows(static_cast<uint8_t*>(dst), rows, cols, s.permuted_heads);
  }
  if (s.qkv_heads > 0) {
    regroup_gguf_neox_qkv(dst, static_cast<int64_t>(s.tensor->numel() / s.tensor->dims[0]),
                          row->row_bytes(static_cast<int64_t>(s.tensor->dims[0])), s.qkv_heads);
  }
}

std::string GgufCheckpoint::format_summary() const {
  std::map<std::string_view, int> counts;
  for (const auto& [name, s] : sources_) ++counts[s.tensor->format->name];
  std::vector<std::pair<int, std::string_view>> sorted;
  for (const auto& [format, count] : counts) sorted.emplace_back(-count, format);
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (const auto& [count, format] : sorted) {
    out += detail::concat(out.empty() ? "" : ", ", format, " x ", -count);
  }
  return out;
}

std::map<std::string, nlohmann::json> GgufCheckpoint::hf_documents() const {
  std::map<std::string, nlohmann::json> docs;
  if (const auto* neox = dynamic_cast<const NeoxModel*>(model_.get())) {
    docs["config.json"] = hf_neox_config_json(neox->config());
  } else {
    docs["config.json"] = hf_llama_config_json(static_cast<const LlamaModel&>(*model_).config());
  }
  if (file_.find("tokenizer.ggml.model")) {
    docs["tokenizer.json"] = gguf_tokenizer_json(file_);
    docs["tokenizer_config.json"] = gguf_tokenizer_config_json(file_);
  }
  return docs;
}

}  // namespace h2oflex
