// Tiny LLaMA-family and GPT-NeoX shapes for the engine tests: grouped-query attention (8 query
// heads sharing 2 KV heads), llama3 rotary scaling, and NeoX's partial rotary with a parallel
// residual — small enough to run many placements in seconds.
#pragma once

#include <memory>

#include "models/gpt_neox/neox_model.h"
#include "models/llama/llama_model.h"

namespace h2oflex::testing_support {

inline LlamaConfig tiny_llama_gqa() {
  LlamaConfig c;
  c.name = "tiny-llama-gqa";
  c.hidden = 64;
  c.heads = 8;
  c.kv_heads = 2;
  c.head_dim = 8;
  c.layers = 3;
  c.ffn = 96;
  c.vocab = 300;
  c.max_positions = 64;
  c.rope_theta = 10000;
  c.rope_scaling = {RopeScaling::Type::Llama3, 4, 1, 4, 16};
  return c;
}

inline NeoxConfig tiny_neox() {
  NeoxConfig c;
  c.name = "tiny-neox";
  c.hidden = 64;
  c.heads = 4;
  c.layers = 2;
  c.ffn = 128;
  c.vocab = 300;
  c.max_positions = 64;
  c.rotary_pct = 0.25;
  return c;
}

inline std::shared_ptr<const DecoderModel> llama_gqa_model() {
  return std::make_shared<const LlamaModel>(tiny_llama_gqa());
}

inline std::shared_ptr<const DecoderModel> neox_model() {
  return std::make_shared<const NeoxModel>(tiny_neox());
}

}  // namespace h2oflex::testing_support
