#include "models/opt/opt_layers.h"

#include <cmath>

#include "models/family_parts.h"

namespace h2oflex {

namespace {

using family::scratch;
using ops::Scratch;

}  // namespace

float opt_attention_scale(const OptConfig& cfg) {
  return 1.0f / std::sqrt(static_cast<float>(cfg.head_dim()));
}

void opt_embed(const OptConfig& cfg, const OptEmbeddingWeights& w, ops::ComputeType ct,
               const Tensor& ids, const Tensor& positions, Tensor& hidden) {
  const int64_t rows = ids.numel();
  if (cfg.has_projections()) {
    Tensor words = scratch(Scratch::Embed, {rows, cfg.word_embed_dim}, hidden);
    ops::embed_tokens(ids, w.tokens, words);
    ops::linear(words, w.project_in, nullptr, hidden, ct);
  } else {
    ops::embed_tokens(ids, w.tokens, hidden);
  }
  ops::add_positions(hidden, positions, w.positions, 2);
}

void opt_logits(const OptConfig& cfg, const OptEmbeddingWeights& w, ops::ComputeType ct,
                const Tensor& hidden, Tensor& logits) {
  const int64_t rows = hidden.dim(0);
  Tensor x = hidden;
  if (cfg.pre_layer_norm) {
    x = scratch(Scratch::Normed, {rows, cfg.hidden}, hidden);
    ops::layer_norm(hidden, w.final_ln_w, w.final_ln_b, cfg.layer_norm_eps, x);
  }
  if (cfg.has_projections()) {
    Tensor words = scratch(Scratch::Embed, {rows, cfg.word_embed_dim}, hidden);
    ops::linear(x, w.project_out, nullptr, words, ct);
    x = words;
  }
  ops::linear(x, w.tokens, nullptr, logits, ct);
}

void opt_attention_input(const OptConfig& cfg, const OptLayerWeights& w, ops::ComputeType ct,
                         const Tensor& hidden, Tensor& q, Tensor& k, Tensor& v) {
  Tensor x = hidden;
  if (cfg.pre_layer_norm) {
    x = scratch(Scratch::Normed, hidden.shape(), hidden);
    ops::layer_norm(hidden, w.attn_ln_w, w.attn_ln_b, cfg.layer_norm_eps, x);
  }
  const ops::LinearOut qkv[] = {{&w.q_w, &w.q_b, &q}, {&w.k_w, &w.k_b, &k}, {&w.v_w, &w.v_b, &v}};
  ops::linear_same_input(x, qkv, ct);
}

void opt_layer_finish(const OptConfig& cfg, const OptLayerWeights& w, ops::ComputeType ct,
                      Tensor& hidden, const Tensor& attn) {
  const int64_t rows = hidden.dim(0);
  Tensor proj = scratch(Scratch::Projection, {rows, cfg.hidden}, hidden);
  ops::linear(attn, w.o_w, &w.o_b, proj, ct);
  ops::add_inplace(hidden, proj);
  if (!cfg.pre_layer_norm) {
    ops::layer_norm(hidden, w.attn_ln_w, w.attn_ln_b, cfg.layer_norm_eps, hidden);
  }
  Tensor x = hidden;
  if (cfg.pre_layer_norm) {
    x = scratch(Scratch::Normed, {rows, cfg.hidden}, hidden);
    ops::layer_norm(hidden, w.ffn_ln_w, w.ffn_ln_b, cfg.layer_norm_eps, x);
  }
  Tensor ffn = scratch(Scratch::Ffn, {rows, cfg.ffn}, hidden);
  ops::linear(x, w.fc1_w, &w.fc1_b, ffn, ct, /*relu=*/true);
  ops::linear(ffn, w.fc2_w, &w.fc2_b, proj, ct);
  ops::add_inplace(hidden, proj);
  if (!cfg.pre_layer_norm) {
    ops::layer_norm(hidden, w.ffn_ln_w, w.ffn_ln_b, cfg.layer_norm_eps, hidden);
  }
}

}  // namespace h2oflex
