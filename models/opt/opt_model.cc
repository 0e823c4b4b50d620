#include "models/opt/opt_model.h"

namespace h2oflex {

namespace {

struct OptLayerUnit final : UnitWeights {
  OptLayerWeights w;
};

// The embedding and the head unit each hold the part of the embedding tensors they use.
struct OptEmbeddingUnit final : UnitWeights {
  OptEmbeddingWeights w;
};

const OptLayerWeights& layer_of(const UnitWeights& u) {
  return static_cast<const OptLayerUnit&>(u).w;
}

const OptEmbeddingWeights& embedding_of(const UnitWeights& u) {
  return static_cast<const OptEmbeddingUnit&>(u).w;
}

}  // namespace

OptModel::OptModel(OptConfig cfg) : cfg_(std::move(cfg)), specs_(opt_weight_specs(cfg_)) {
  units_ = group_units(specs_, cfg_.layers, [](const WeightSpec& s) {
    if (s.name == "decoder.embed_tokens.weight") return UnitSide::Both;  // tied lm_head
    if (s.name == "decoder.embed_positions.weight" || s.name == "decoder.project_in.weight") {
      return UnitSide::Embedding;
    }
    return UnitSide::Head;
  });
}

KvGeometry OptModel::kv_geometry() const {
  return {cfg_.heads, cfg_.heads, cfg_.head_dim(), opt_attention_scale(cfg_)};
}

std::unique_ptr<UnitWeights> OptModel::bind(int unit, const std::vector<Tensor>& tensors) const {
  if (unit >= 1 && unit <= cfg_.layers) {
    auto u = std::make_unique<OptLayerUnit>();
    u->w = bind_layer_weights(unit - 1, tensors);
    return u;
  }
  auto u = std::make_unique<OptEmbeddingUnit>();
  const std::vector<size_t>& idx = units_.at(static_cast<size_t>(unit));
  H2OFLEX_CHECK(idx.size() == tensors.size(), "OPT unit ", unit, ": expected ", idx.size(),
                " tensors, got ", tensors.size());
  OptEmbeddingWeights& e = u->w;
  for (size_t i = 0; i < idx.size(); ++i) {
    const std::string& n = specs_[idx[i]].name;
    if (n == "decoder.embed_tokens.weight") e.tokens = tensors[i];
    if (n == "decoder.embed_positions.weight") e.positions = tensors[i];
    if (n == "decoder.project_in.weight") e.project_in = tensors[i];
    if (n == "decoder.project_out.weight") e.project_out = tensors[i];
    if (n == "decoder.final_layer_norm.weight") e.final_ln_w = tensors[i];
    if (n == "decoder.final_layer_norm.bias") e.final_ln_b = tensors[i];
  }
  return u;
}

void OptModel::embed(const UnitWeights& unit, ops::ComputeType ct, const Tensor& ids,
                     const Tensor& positions, Tensor& hidden) const {
  opt_embed(cfg_, embedding_of(unit), ct, ids, positions, hidden);
}

void OptModel::attention_input(const UnitWeights& layer, ops::ComputeType ct, const Tensor& hidden,
                               const Tensor& /*positions: learned, added
         at the embedding*/, Tensor& q, Tensor& k, Tensor& v) const {
  opt_attention_input(cfg_, layer_of(layer), ct, hidden, q, k, v);
}

void OptModel::layer_finish(const UnitWeights& layer, ops::ComputeType ct, Tensor& hidden,
                            const Tensor& attn) const {
  opt_layer_finish(cfg_, layer_of(layer), ct, hidden, attn);
}

void OptModel::logits(const UnitWeights& head, ops::ComputeType ct, const Tensor& hidden,
                      Tensor& logits) const {
  opt_logits(cfg_, embedding_of(head), ct, hidden, logits);
}

int64_t OptModel::scratch_elems_per_row() const {
  // LayerNorm output, q, attention output and the output projection per row, the MLP's hidden
  // layer, and the word embedding when projections exist.
  const int64_t embed = cfg_.has_projections() ? cfg_.word_embed_dim : 0;
  return 4 * cfg_.hidden + cfg_.ffn + embed;
}

}  // namespace h2oflex
