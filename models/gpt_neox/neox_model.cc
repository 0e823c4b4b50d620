#include "models/gpt_neox/neox_model.h"

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

struct NeoxLayer final : UnitWeights {
  Tensor ln1_w, ln1_b, qkv_w, qkv_b, dense_w, dense_b, ln2_w, ln2_b, up_w, up_b, down_w, down_b;
};

struct NeoxEnds final : UnitWeights {
  Tensor tokens, final_ln_w, final_ln_b, embed_out;
};

std::string layer_prefix(int64_t l) {
  return "gpt_neox.layers." + std::to_string(l) + ".";
}

}  // namespace

NeoxModel::NeoxModel(NeoxConfig cfg) : cfg_(std::move(cfg)) {
  const int64_t h = cfg_.hidden, f = cfg_.ffn;
  auto add = [&](std::string name, Shape shape, int layer) {
    family::add_spec(specs_, std::move(name), std::move(shape), layer);
  };
  add("gpt_neox.embed_in.weight", {cfg_.vocab, h}, -1);
  for (int l = 0; l < cfg_.layers; ++l) {
    const std::string p = layer_prefix(l);
    add(p + "input_layernorm.weight", {h}, l);
    add(p + "input_layernorm.bias", {h}, l);
    add(p + "attention.query_key_value.weight", {3 * h, h}, l);
    if (cfg_.attention_bias) add(p + "attention.query_key_value.bias", {3 * h}, l);
    add(p + "attention.dense.weight", {h, h}, l);
    if (cfg_.attention_bias) add(p + "attention.dense.bias", {h}, l);
    add(p + "post_attention_layernorm.weight", {h}, l);
    add(p + "post_attention_layernorm.bias", {h}, l);
    add(p + "mlp.dense_h_to_4h.weight", {f, h}, l);
    add(p + "mlp.dense_h_to_4h.bias", {f}, l);
    add(p + "mlp.dense_4h_to_h.weight", {h, f}, l);
    add(p + "mlp.dense_4h_to_h.bias", {h}, l);
  }
  add("gpt_neox.final_layer_norm.weight", {h}, -1);
  add("gpt_neox.final_layer_norm.bias", {h}, -1);
  add("embed_out.weight", {cfg_.vocab, h}, -1);
  units_ = group_units(specs_, cfg_.layers, [](const WeightSpec& s) {
    return s.name == "gpt_neox.embed_in.weight" ? UnitSide::Embedding : UnitSide::Head;
  });
  const std::vector<float> inv =
      rope_inv_freq({cfg_.rot_dim(), cfg_.rope_theta, cfg_.rope_scaling});
  inv_freq_ = family::host_f32(inv);
}

KvGeometry NeoxModel::kv_geometry() const {
  return {cfg_.heads, cfg_.heads, cfg_.head_dim(),
          1.0f / std::sqrt(static_cast<float>(cfg_.head_dim()))};
}

std::unique_ptr<UnitWeights> NeoxModel::bind(int unit, const std::vector<Tensor>& tensors) const {
  const BoundTensors t(*this, unit, tensors);
  if (unit >= 1 && unit <= cfg_.layers) {
    const std::string p = layer_prefix(unit - 1);
    auto u = std::make_unique<NeoxLayer>();
    u->ln1_w = t.get(p + "input_layernorm.weight");
    u->ln1_b = t.get(p + "input_layernorm.bias");
    u->qkv_w = t.get(p + "attention.query_key_value.weight");
    u->dense_w = t.get(p + "attention.dense.weight");
    if (cfg_.attention_bias) {
      u->qkv_b = t.get(p + "attention.query_key_value.bias");
      u->dense_b = t.get(p + "attention.dense.bias");
    }
    u->ln2_w = t.get(p + "post_attention_layernorm.weight");
    u->ln2_b = t.get(p + "post_attention_layernorm.bias");
    u->up_w = t.get(p + "mlp.dense_h_to_4h.weight");
    u->up_b = t.get(p + "mlp.dense_h_to_4h.bias");
    u->down_w = t.get(p + "mlp.dense_4h_to_h.weight");
    u->down_b = t.get(p + "mlp.dense_4h_to_h.bias");
    return u;
  }
  auto u = std::make_unique<NeoxEnds>();
  if (unit == 0) {
    u->tokens = t.get("gpt_neox.embed_in.weight");
  } else {
    u->final_ln_w = t.get("gpt_neox.final_layer_norm.weight");
    u->final_ln_b = t.get("gpt_neox.final_layer_norm.bias");
    u->embed_out = t.get("embed_out.weight");
  }
  return u;
}

void NeoxModel::embed(const UnitWeights& unit, ops::ComputeType /*ct*/, const Tensor& ids,
                      const Tensor& /*positions: rotary, applied to q and k*/,
                      Tensor& hidden) const {
  ops::embed_tokens(ids, static_cast<const NeoxEnds&>(unit).tokens, hidden);
}

void NeoxModel::attention_input(const UnitWeights& layer, ops::ComputeType ct, const Tensor& hidden,
                                const Tensor& positions, Tensor& q, Tensor& k, Tensor& v) const {
  const auto& w = static_cast<const NeoxLayer&>(layer);
  const int64_t rows = hidden.dim(0);
  Tensor x = scratch(Scratch::Normed, hidden.shape(), hidden);
  ops::layer_norm(hidden, w.ln1_w, w.ln1_b, cfg_.layer_norm_eps, x);
  Tensor qkv = scratch(Scratch::FusedQkv, {rows, 3 * cfg_.hidden}, hidden);
  ops::linear(x, w.qkv_w, bias_if(cfg_.attention_bias, w.qkv_b), qkv, ct);
  ops::split_qkv_heads(qkv, cfg_.heads, q, k, v);
  if (cfg_.rot_dim() == 0) return;
  const Tensor inv_freq = ops::scratch_copy(Scratch::RopeFrequencies, inv_freq_, hidden.device());
  ops::rotary_embedding(q, positions, cfg_.heads, cfg_.rot_dim(), inv_freq);
  ops::rotary_embedding(k, positions, cfg_.heads, cfg_.rot_dim(), inv_freq);
}

void NeoxModel::layer_finish(const UnitWeights& layer, ops::ComputeType ct, Tensor& hidden,
                             const Tensor& attn) const {
  const auto& w = static_cast<const NeoxLayer&>(layer);
  const int64_t rows = hidden.dim(0);
  Tensor attn_out = scratch(Scratch::Projection, {rows, cfg_.hidden}, hidden);
  ops::linear(attn, w.dense_w, bias_if(cfg_.attention_bias, w.dense_b), attn_out, ct);
  Tensor x = scratch(Scratch::Normed, {rows, cfg_.hidden}, hidden);
  if (cfg_.parallel_residual) {
    // The MLP reads the layer's input, not the attention's output: x + attn(ln1(x)) + mlp(ln2(x)).
    ops::layer_norm(hidden, w.ln2_w, w.ln2_b, cfg_.layer_norm_eps, x);
    ops::add_inplace(hidden, attn_out);
  } else {
    ops::add_inplace(hidden, attn_out);
    ops::layer_norm(hidden, w.ln2_w, w.ln2_b, cfg_.layer_norm_eps, x);
  }
  Tensor ffn = scratch(Scratch::Ffn, {rows, cfg_.ffn}, hidden);
  ops::linear(x, w.up_w, &w.up_b, ffn, ct);
  ops::gelu(ffn);
  ops::linear(ffn, w.down_w, &w.down_b, attn_out, ct);
  ops::add_inplace(hidden, attn_out);
}

void NeoxModel::logits(const UnitWeights& head, ops::ComputeType ct, const Tensor& hidden,
                       Tensor& logits) const {
  const auto& w = static_cast<const NeoxEnds&>(head);
  Tensor x = scratch(Scratch::Normed, hidden.shape(), hidden);
  ops::layer_norm(hidden, w.final_ln_w, w.final_ln_b, cfg_.layer_norm_eps, x);
  ops::linear(x, w.embed_out, nullptr, logits, ct);
}

int64_t NeoxModel::scratch_elems_per_row() const {
  // The normed input, the fused q/k/v output, q and the attention output, the output
  // projection, and the MLP's hidden layer.
  return 2 * cfg_.hidden + 3 * cfg_.hidden + 2 * cfg_.hidden + cfg_.ffn;
}

}  // namespace h2oflex
