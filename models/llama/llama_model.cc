#include "models/llama/llama_model.h"

#include <cmath>

#include "models/bound_tensors.h"
#include "models/family_parts.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/scratch.h"

namespace h2oflex {

namespace {

using family::bias_if;
using family::scratch;
using ops::Scratch;

struct LlamaLayer final : UnitWeights {
  Tensor in_norm, q_w, q_b, k_w, k_b, v_w, v_b, o_w, post_norm, gate_w, up_w, down_w;
};

struct LlamaEnds final : UnitWeights {
  Tensor tokens, final_norm, lm_head;  // lm_head is `tokens` when tied
};

std::string layer_prefix(int64_t l) {
  return "layers." + std::to_string(l) + ".";
}

}  // namespace

LlamaModel::LlamaModel(LlamaConfig cfg) : cfg_(std::move(cfg)) {
  const int64_t h = cfg_.hidden, q = cfg_.q_width(), kv = cfg_.kv_width(), f = cfg_.ffn;
  auto add = [&](std::string name, Shape shape, int layer) {
    family::add_spec(specs_, std::move(name), std::move(shape), layer);
  };
  add("embed_tokens.weight", {cfg_.vocab, h}, -1);
  for (int l = 0; l < cfg_.layers; ++l) {
    const std::string p = layer_prefix(l);
    add(p + "input_layernorm.weight", {h}, l);
    add(p + "self_attn.q_proj.weight", {q, h}, l);
    if (cfg_.qkv_bias) add(p + "self_attn.q_proj.bias", {q}, l);
    add(p + "self_attn.k_proj.weight", {kv, h}, l);
    if (cfg_.qkv_bias) add(p + "self_attn.k_proj.bias", {kv}, l);
    add(p + "self_attn.v_proj.weight", {kv, h}, l);
    if (cfg_.qkv_bias) add(p + "self_attn.v_proj.bias", {kv}, l);
    add(p + "self_attn.o_proj.weight", {h, q}, l);
    add(p + "post_attention_layernorm.weight", {h}, l);
    add(p + "mlp.gate_proj.weight", {f, h}, l);
    add(p + "mlp.up_proj.weight", {f, h}, l);
    add(p + "mlp.down_proj.weight", {h, f}, l);
  }
  add("norm.weight", {h}, -1);
  if (!cfg_.tied_embeddings) add("lm_head.weight", {cfg_.vocab, h}, -1);
  const bool tied = cfg_.tied_embeddings;
  units_ = group_units(specs_, cfg_.layers, [tied](const WeightSpec& s) {
    if (s.name == "embed_tokens.weight") return tied ? UnitSide::Both : UnitSide::Embedding;
    return UnitSide::Head;
  });
  const std::vector<float> inv = rope_inv_freq({cfg_.head_dim, cfg_.rope_theta, cfg_.rope_scaling});
  inv_freq_ = family::host_f32(inv);
}

KvGeometry LlamaModel::kv_geometry() const {
  return {cfg_.heads, cfg_.kv_heads, cfg_.head_dim,
          1.0f / std::sqrt(static_cast<float>(cfg_.head_dim))};
}

std::unique_ptr<UnitWeights> LlamaModel::bind(int unit, const std::vector<Tensor>& tensors) const {
  const BoundTensors t(*this, unit, tensors);
  if (unit >= 1 && unit <= cfg_.layers) {
    const std::string p = layer_prefix(unit - 1);
    auto u = std::make_unique<LlamaLayer>();
    u->in_norm = t.get(p + "input_layernorm.weight");
    u->q_w = t.get(p + "self_attn.q_proj.weight");
    u->k_w = t.get(p + "self_attn.k_proj.weight");
    u->v_w = t.get(p + "self_attn.v_proj.weight");
    if (cfg_.qkv_bias) {
      u->q_b = t.get(p + "self_attn.q_proj.bias");
      u->k_b = t.get(p + "self_attn.k_proj.bias");
      u->v_b = t.get(p + "self_attn.v_proj.bias");
    }
    u->o_w = t.get(p + "self_attn.o_proj.weight");
    u->post_norm = t.get(p + "post_attention_layernorm.weight");
    u->gate_w = t.get(p + "mlp.gate_proj.weight");
    u->up_w = t.get(p + "mlp.up_proj.weight");
    u->down_w = t.get(p + "mlp.down_proj.weight");
    return u;
  }
  auto u = std::make_unique<LlamaEnds>();
  if (unit == 0) {
    u->tokens = t.get("embed_tokens.weight");
  } else {
    u->final_norm = t.get("norm.weight");
    u->lm_head = t.get(cfg_.tied_embeddings ? "embed_tokens.weight" : "lm_head.weight");
  }
  return u;
}

void LlamaModel::embed(const UnitWeights& unit, ops::ComputeType /*ct*/, const Tensor& ids,
                       const Tensor& /*positions: rotary, applied to q and k*/,
                       Tensor& hidden) const {
  ops::embed_tokens(ids, static_cast<const LlamaEnds&>(unit).tokens, hidden);
}

void LlamaModel::attention_input(const UnitWeights& layer, ops::ComputeType ct,
                                 const Tensor& hidden, const Tensor& positions, Tensor& q,
                                 Tensor& k, Tensor& v) const {
  const auto& w = static_cast<const LlamaLayer&>(layer);
  Tensor x = scratch(Scratch::Normed, hidden.shape(), hidden);
  ops::rms_norm(hidden, w.in_norm, cfg_.rms_norm_eps, x);
  const ops::LinearOut qkv[] = {{&w.q_w, bias_if(cfg_.qkv_bias, w.q_b), &q},
                                {&w.k_w, bias_if(cfg_.qkv_bias, w.k_b), &k},
                                {&w.v_w, bias_if(cfg_.qkv_bias, w.v_b), &v}};
  ops::linear_same_input(x, qkv, ct);
  const Tensor inv_freq = ops::scratch_copy(Scratch::RopeFrequencies, inv_freq_, hidden.device());
  ops::rotary_embedding(q, positions, cfg_.heads, cfg_.head_dim, inv_freq);
  ops::rotary_embedding(k, positions, cfg_.kv_heads, cfg_.head_dim, inv_freq);
}

void LlamaModel::layer_finish(const UnitWeights& layer, ops::ComputeType ct, Tensor& hidden,
                              const Tensor& attn) const {
  const auto& w = static_cast<const LlamaLayer&>(layer);
  const int64_t rows = hidden.dim(0);
  Tensor proj = scratch(Scratch::Projection, {rows, cfg_.hidden}, hidden);
  ops::linear(attn, w.o_w, nullptr, proj, ct);
  ops::add_inplace(hidden, proj);
  Tensor x = scratch(Scratch::Normed, {rows, cfg_.hidden}, hidden);
  ops::rms_norm(hidden, w.post_norm, cfg_.rms_norm_eps, x);
  Tensor gate = scratch(Scratch::Ffn, {rows, cfg_.ffn}, hidden);
  Tensor up = scratch(Scratch::FfnUp, {rows, cfg_.ffn}, hidden);
  const ops::LinearOut gate_up[] = {{&w.gate_w, nullptr, &gate}, {&w.up_w, nullptr, &up}};
  ops::linear_same_input(x, gate_up, ct);
  ops::silu_mul(gate, up, gate);
  ops::linear(gate, w.down_w, nullptr, proj, ct);
  ops::add_inplace(hidden, proj);
}

void LlamaModel::logits(const UnitWeights& head, ops::ComputeType ct, const Tensor& hidden,
                        Tensor& logits) const {
  const auto& w = static_cast<const LlamaEnds&>(head);
  Tensor x = scratch(Scratch::Normed, hidden.shape(), hidden);
  ops::rms_norm(hidden, w.final_norm, cfg_.rms_norm_eps, x);
  ops::linear(x, w.lm_head, nullptr, logits, ct);
}

int64_t LlamaModel::scratch_elems_per_row() const {
  // The normed input and the output projection, q and the attention output, and the MLP's gate
  // and up halves.
  return 2 * cfg_.hidden + 2 * cfg_.q_width() + 2 * cfg_.ffn;
}

}  // namespace h2oflex
