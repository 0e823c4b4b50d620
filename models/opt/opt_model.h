// An OPT model's weights held in host memory, loaded tensor by tensor from a producer.
#pragma once

#include <functional>
#include <vector>

#include "models/opt/opt_layers.h"

namespace h2oflex {

struct OptWeights {
  OptEmbeddingWeights embed;
  std::vector<OptLayerWeights> layers;
};

// Fills one tensor, given its spec and the dtype to store it in, into dst (numel elements).
using WeightProducer = std::function<void(const WeightSpec&, DType, void* dst)>;

// Matrices are stored as `matrix_dtype` (the compute's weight type), vectors as f32.
OptWeights load_opt_weights(const OptConfig& cfg, DType matrix_dtype, const WeightProducer& fill);

WeightProducer dummy_weight_producer(uint64_t seed);

}  // namespace h2oflex
