// `general.architecture` gptneox: a GGUF file as the engine's GPT-NeoX family (models/gpt_neox).
//
// llama.cpp's converter writes HF's GPTNeoXForCausalLM with these keys (`gptneox.` prefix):
// context_length, embedding_length, block_count, feed_forward_length, rope.dimension_count (the
// rotated dimensions of each head: partial rotary), attention.head_count, use_parallel_residual,
// attention.layer_norm_epsilon; and these tensors: token_embd, blk.N.attn_norm (weight, bias),
// attn_qkv, attn_output, ffn_norm, ffn_up, ffn_down (weights and biases), output_norm, output.
// It regroups the rows of the fused query_key_value projection from HF's per-head
// [head][q, k, v][head_dim] to [q; k; v][head][head_dim]; the engine keeps HF's layout, so the
// rows are put back on read. Rotary needs nothing more: NeoX rotates the two halves of a head's
// rotated dimensions in both (llama.cpp's NEOX rope type).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/gguf/gguf_file.h"
#include "models/gpt_neox/neox_model.h"

namespace h2oflex {

// The model the metadata describes; InputError naming the key (or tensor) for what the family
// cannot run: key/value heads other than the heads, an odd or too wide rotary dimension count,
// rope scaling, no `output.weight` (a tied head).
NeoxConfig gguf_neox_config(const GgufFile& file, const std::string& name);

// llama.cpp's name of the NeoX weight spec `spec_name` ("gpt_neox.layers.0.attention.dense.weight"
// -> "blk.0.attn_output.weight").
std::string gguf_neox_tensor_name(const std::string& spec_name);
bool is_gguf_neox_qkv(const std::string& gguf_name);

// A stored attn_qkv tensor (weight or bias), unpacked to f32 and stored as `dtype` into `dst` in
// HF's row order: read a head's q, k or v rows at a time (the RAM beyond `dst` is one head's rows).
void read_gguf_neox_qkv(const GgufFile& file, const GgufTensorInfo& tensor, int64_t heads,
                        DType dtype, void* dst);
// The same reorder on rows of `row_bytes` bytes already in memory (packed blocks: a row is whole
// blocks), from [q; k; v][head] to [head][q, k, v].
void regroup_gguf_neox_qkv(void* data, int64_t rows, size_t row_bytes, int64_t heads);

// config.json of a GPTNeoXForCausalLM with this config (read back by read_hf_neox_config).
nlohmann::json hf_neox_config_json(const NeoxConfig& c);

}  // namespace h2oflex
