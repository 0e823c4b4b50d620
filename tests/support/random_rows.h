// A seeded normal(0, std) f32 matrix for the op tests: the same rows for the same stream.
#pragma once

#include <cstdint>

#include "runtime/core/rng.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

inline Tensor random_rows(int64_t rows, int64_t n, uint64_t stream, float std) {
  Tensor t = Tensor::empty({rows, n}, DType::F32);
  fill_normal(t.data<float>(), static_cast<uint64_t>(t.numel()), 77, stream, 0, 0.0f, std);
  return t;
}

}  // namespace h2oflex
