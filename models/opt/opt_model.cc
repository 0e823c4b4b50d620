#include "models/opt/opt_model.h"

#include <map>

#include "models/loaders/dummy_weights.h"

namespace h2oflex {

OptWeights load_opt_weights(const OptConfig& cfg, DType matrix_dtype, const WeightProducer& fill) {
  std::map<std::string, Tensor> by_name;
  for (const WeightSpec& spec : opt_weight_specs(cfg)) {
    const DType dtype = spec.role == WeightRole::Matrix ? matrix_dtype : DType::F32;
    Tensor t = Tensor::empty(spec.shape, dtype);
    fill(spec, dtype, t.raw());
    by_name.emplace(spec.name, std::move(t));
  }
  auto gather = [&](const std::vector<std::string>& names) {
    std::vector<Tensor> out;
    for (const auto& n : names) out.push_back(by_name.at(n));
    return out;
  };
  OptWeights w;
  w.embed = bind_embedding_weights(cfg, gather(opt_embedding_weight_names(cfg)));
  for (int l = 0; l < cfg.layers; ++l) {
    w.layers.push_back(bind_layer_weights(l, gather(opt_layer_weight_names(l))));
  }
  return w;
}

WeightProducer dummy_weight_producer(uint64_t seed) {
  return [seed](const WeightSpec& spec, DType dtype, void* dst) {
    dummy_weight_fill(spec, seed, dtype, 0, static_cast<uint64_t>(shape_numel(spec.shape)), dst);
  };
}

}  // namespace h2oflex
