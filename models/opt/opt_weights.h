// OPT weights: the layout table (names, shapes) kept apart from the forward pass, and the tensors
// one decoder layer or the embeddings need.
#pragma once

#include <string>
#include <vector>

#include "models/opt/opt_config.h"
#include "models/weight_spec.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

// Every tensor of an OPT model in execution order: embeddings first, then layer by layer, then the
// output side (final LayerNorm, project_out). The lm_head is tied to embed_tokens.
std::vector<WeightSpec> opt_weight_specs(const OptConfig& cfg);

struct OptLayerWeights {
  Tensor attn_ln_w, attn_ln_b;
  Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
  Tensor ffn_ln_w, ffn_ln_b;
  Tensor fc1_w, fc1_b, fc2_w, fc2_b;
};

struct OptEmbeddingWeights {
  Tensor tokens;                  // [vocab, word_embed_dim], also the lm_head
  Tensor positions;               // [max_positions + 2, hidden]
  Tensor project_in;              // [hidden, word_embed_dim] when word_embed_dim != hidden
  Tensor project_out;             // [word_embed_dim, hidden]
  Tensor final_ln_w, final_ln_b;  // pre-LN models only
};

// Binds a layer's tensors (opt_layer_weight_names order) into the struct above.
OptLayerWeights bind_layer_weights(int layer, const std::vector<Tensor>& layer_tensors);

// Names of the tensors of layer `layer` (in the order bind_layer_weights expects).
std::vector<std::string> opt_layer_weight_names(int layer);

}  // namespace h2oflex
