// OPT weights: the layout table (names, shapes) kept apart from the forward pass, and the tensors
// one decoder layer or the embeddings need.
#pragma once

#include <string>
#include <vector>

#include "models/opt/opt_config.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

// Role decides storage: matrices are stored in the compute's weight dtype, vectors in f32.
enum class WeightRole { Matrix, Vector };

struct WeightSpec {
  std::string
      name;  // Hugging Face name without the "model." prefix, e.g. "decoder.layers.0.fc1.weight"
  Shape shape;
  WeightRole role;
  int layer;  // -1 for embedding / head tensors
};

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

// Binds tensors looked up by name (spec order) into the structs above.
OptLayerWeights bind_layer_weights(int layer, const std::vector<Tensor>& layer_tensors);
OptEmbeddingWeights bind_embedding_weights(const OptConfig& cfg,
                                           const std::vector<Tensor>& embedding_tensors);

// Names of the tensors of layer `layer` (in the order bind_layer_weights expects).
std::vector<std::string> opt_layer_weight_names(int layer);
std::vector<std::string> opt_embedding_weight_names(const OptConfig& cfg);

}  // namespace h2oflex
