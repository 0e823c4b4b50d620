// The OPT forward pass as a few composable pieces, so the engine can run attention wherever the
// KV cache lives and stream weights layer by layer. Hidden states are f32 [rows, hidden].
#pragma once

#include <vector>

#include "models/opt/opt_weights.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

// hidden[rows, H] = embed_tokens[ids] (projected in if needed) + embed_positions[positions + 2].
void opt_embed(const OptConfig& cfg, const OptEmbeddingWeights& w, ops::ComputeType ct,
               const Tensor& ids, const Tensor& positions, Tensor& hidden);

// logits[rows, vocab] from final hidden states (final LayerNorm, project_out, tied lm_head).
void opt_logits(const OptConfig& cfg, const OptEmbeddingWeights& w, ops::ComputeType ct,
                const Tensor& hidden, Tensor& logits);

// Attention input: q, k, v [rows, H] projections of (pre-LN models: LayerNorm of) hidden.
void opt_attention_input(const OptConfig& cfg, const OptLayerWeights& w, ops::ComputeType ct,
                         const Tensor& hidden, Tensor& q, Tensor& k, Tensor& v);

// The rest of a layer once attention produced `attn` [rows, H]: output projection, residual,
// (post-LN models: LayerNorm), MLP with its residual and norms. Updates hidden in place.
void opt_layer_finish(const OptConfig& cfg, const OptLayerWeights& w, ops::ComputeType ct,
                      Tensor& hidden, const Tensor& attn);

float opt_attention_scale(const OptConfig& cfg);

}  // namespace h2oflex
