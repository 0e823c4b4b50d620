#include "models/opt/opt_weights.h"

namespace h2oflex {

namespace {
std::string layer_prefix(int layer) {
  return "decoder.layers." + std::to_string(layer) + ".";
}
}  // namespace

std::vector<std::string> opt_layer_weight_names(int layer) {
  const std::string p = layer_prefix(layer);
  return {p + "self_attn_layer_norm.weight",
          p + "self_attn_layer_norm.bias",
          p + "self_attn.q_proj.weight",
          p + "self_attn.q_proj.bias",
          p + "self_attn.k_proj.weight",
          p + "self_attn.k_proj.bias",
          p + "self_attn.v_proj.weight",
          p + "self_attn.v_proj.bias",
          p + "self_attn.out_proj.weight",
          p + "self_attn.out_proj.bias",
          p + "final_layer_norm.weight",
          p + "final_layer_norm.bias",
          p + "fc1.weight",
          p + "fc1.bias",
          p + "fc2.weight",
          p + "fc2.bias"};
}

std::vector<WeightSpec> opt_weight_specs(const OptConfig& c) {
  const int64_t h = c.hidden, f = c.ffn, e = c.word_embed_dim;
  std::vector<WeightSpec> specs;
  auto add = [&](std::string name, Shape shape, int layer) {
    const WeightRole role = shape.size() == 2 ? WeightRole::Matrix : WeightRole::Vector;
    specs.push_back({std::move(name), std::move(shape), role, layer});
  };
  add("decoder.embed_tokens.weight", {c.vocab, e}, -1);
  add("decoder.embed_positions.weight", {c.max_positions + 2, h}, -1);
  if (c.has_projections()) add("decoder.project_in.weight", {h, e}, -1);
  for (int l = 0; l < c.layers; ++l) {
    const auto names = opt_layer_weight_names(l);
    const Shape shapes[] = {{h},    {h}, {h, h}, {h}, {h, h}, {h}, {h, h}, {h},
                            {h, h}, {h}, {h},    {h}, {f, h}, {f}, {h, f}, {h}};
    for (size_t i = 0; i < names.size(); ++i) add(names[i], shapes[i], l);
  }
  if (c.pre_layer_norm) {
    add("decoder.final_layer_norm.weight", {h}, -1);
    add("decoder.final_layer_norm.bias", {h}, -1);
  }
  if (c.has_projections()) add("decoder.project_out.weight", {e, h}, -1);
  return specs;
}

OptLayerWeights bind_layer_weights(int layer, const std::vector<Tensor>& t) {
  H2OFLEX_CHECK(t.size() == 16, "layer ", layer, ": expected 16 tensors, got ", t.size());
  OptLayerWeights w;
  w.attn_ln_w = t[0], w.attn_ln_b = t[1];
  w.q_w = t[2], w.q_b = t[3], w.k_w = t[4], w.k_b = t[5];
  w.v_w = t[6], w.v_b = t[7], w.o_w = t[8], w.o_b = t[9];
  w.ffn_ln_w = t[10], w.ffn_ln_b = t[11];
  w.fc1_w = t[12], w.fc1_b = t[13], w.fc2_w = t[14], w.fc2_b = t[15];
  return w;
}

}  // namespace h2oflex
