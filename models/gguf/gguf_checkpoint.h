// A GGUF file as a model the engine runs: the family and its hyper-parameters from the file's
// metadata, and each of the family's weight specs read from its GGUF tensor (llama.cpp's names,
// `token_embd`, `blk.N.attn_q`, ..., `output_norm`, `output`), unpacked through the block table.
//
// Families: `general.architecture` llama (llama.cpp's converter writes Llama and Mistral models
// so, and permutes the rows of their attn_q / attn_k for its rotary convention; the permutation
// is undone on read) and qwen2 (not permuted; q/k/v biases) run as models/llama; gptneox runs
// as models/gpt_neox (models/gguf/gguf_neox: its fused q/k/v rows are put back in HF's order).
// Any other architecture is refused naming the key. A missing `output.weight` means the LM head is
// the token embedding (tied). The model says which tensors are held in a packed format the engine
// computes on (DecoderModel::weight_source): under `weight_format: stored` they stay so.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/decoder_model.h"
#include "models/gguf/gguf_file.h"

namespace h2oflex {

class GgufCheckpoint {
 public:
  // Opens the file, reads the model from its metadata and checks every tensor the model needs
  // (present, shaped as the metadata implies, of a type the block table unpacks) and that the
  // file holds no other tensors. InputError naming the key or tensor otherwise.
  static std::shared_ptr<const GgufCheckpoint> open(const std::filesystem::path& file);

  const GgufFile& file() const { return file_; }
  const std::shared_ptr<const DecoderModel>& model() const { return model_; }
  // The same model with no packed sources: its shape alone, for dummy weights (which are
  // produced as floats; the K formats cannot be packed here).
  std::shared_ptr<const DecoderModel> shape_model() const;

  // Tensor `spec` unpacked to f32 and stored as `dtype` into `dst` (numel values), its rows in
  // the family's order. Safe to call from several threads at once.
  void read(const WeightSpec& spec, DType dtype, void* dst) const;
  // Tensor `spec` as stored (its blocks in `format`, which must be the file's), rows in the
  // family's order: the PackedWeightProducer of `weight_format: stored`.
  void read_packed(const WeightSpec& spec, PackedFormat format, void* dst) const;
  // The GGUF tensor that holds `spec`.
  const GgufTensorInfo& tensor_of(const WeightSpec& spec) const;

  // The stored types of the model's tensors with their counts, e.g. "Q4_1 x 211, F32 x 61".
  std::string format_summary() const;

  // The Hugging Face files that describe this model beside its weights, by file name:
  // config.json, and when the metadata has a tokenizer, tokenizer.json and
  // tokenizer_config.json (models/gguf/gguf_tokenizer). `convert` writes them next to the
  // offload layout, so the converted directory is a model directory of its own.
  std::map<std::string, nlohmann::json> hf_documents() const;

 private:
  struct Source {
    const GgufTensorInfo* tensor = nullptr;
    int64_t permuted_heads = 0;  // > 0: rows permuted per head by llama.cpp's converter
    int64_t qkv_heads = 0;       // > 0: GPT-NeoX attn_qkv rows regrouped by the converter
  };
  explicit GgufCheckpoint(GgufFile file) : file_(std::move(file)) {}

  GgufFile file_;
  std::shared_ptr<const DecoderModel> model_;
  std::map<std::string, Source, std::less<>> sources_;  // by weight spec name
};

// True when `path` names a GGUF checkpoint (a file whose name ends in ".gguf"): the one rule
// every command uses to tell a GGUF file from a model directory or a published name.
bool is_gguf_path(const std::filesystem::path& path);

}  // namespace h2oflex
