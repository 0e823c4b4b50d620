// One weight tensor of a model, family-neutral: its checkpoint name, shape, role and layer.
#pragma once

#include <functional>
#include <string>

#include "runtime/core/tensor.h"

namespace h2oflex {

// Role decides storage: matrices are stored in the compute's weight dtype, vectors in f32.
enum class WeightRole { Matrix, Vector };

struct WeightSpec {
  std::string name;  // the checkpoint's name without the family's prefix, e.g.
                     // "decoder.layers.0.fc1.weight"
  Shape shape;
  WeightRole role;
  int layer;  // -1 for embedding / head tensors
};

// Fills one tensor, given its spec and the dtype to store it in, into dst (numel elements).
using WeightProducer = std::function<void(const WeightSpec&, DType, void* dst)>;

// The dtype a tensor of `role` is stored in when matrices use `matrix_dtype`.
inline DType stored_dtype(WeightRole role, DType matrix_dtype) {
  return role == WeightRole::Matrix ? matrix_dtype : DType::F32;
}

}  // namespace h2oflex
