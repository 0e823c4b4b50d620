// Deterministic dummy weights: matrices normal(0, 0.02), norm gains 1, biases 0 — from a
// counter-based RNG keyed by (seed, tensor name), so any tensor or any part of one can be produced
// on its own, in any order, in parallel, and always comes out the same.
#pragma once

#include <cstdint>

#include "models/weight_spec.h"

namespace h2oflex {

// Writes elements [first, first + count) of tensor `spec` as `dtype` into dst.
void dummy_weight_fill(const WeightSpec& spec, uint64_t seed, DType dtype, uint64_t first,
                       uint64_t count, void* dst);

// A producer of whole tensors from dummy_weight_fill.
WeightProducer dummy_weight_producer(uint64_t seed);

}  // namespace h2oflex
