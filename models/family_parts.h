// Small pieces every family's model uses the same way: its weight-spec list, f32 working
// buffers, optional biases, the rotary table, and the spelling of published names.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "models/weight_spec.h"
#include "runtime/ops/scratch.h"

namespace h2oflex::family {

// Appends a tensor; rank 2 is a matrix (stored in the compute's weight dtype), the rest vectors.
inline void add_spec(std::vector<WeightSpec>& specs, std::string name, Shape shape, int layer) {
  const WeightRole role = shape.size() == 2 ? WeightRole::Matrix : WeightRole::Vector;
  specs.push_back({std::move(name), std::move(shape), role, layer});
}

// f32 activations in this thread's reusable buffer for `purpose`, on the device of `like`.
inline Tensor scratch(ops::Scratch purpose, Shape shape, const Tensor& like) {
  return ops::scratch(purpose, std::move(shape), DType::F32, like.device());
}

// The bias when the configuration has one (an unbound Tensor is a scalar, not "absent").
inline const Tensor* bias_if(bool present, const Tensor& bias) {
  return present ? &bias : nullptr;
}

// A host f32 vector holding `values` (a rotary table, uploaded per use by scratch_copy).
inline Tensor host_f32(const std::vector<float>& values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::F32);
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

// "meta-llama/Llama-2-7b" -> "llama-2-7b": the organisation dropped, lower case, as the
// published tables spell their names.
inline std::string published_name_key(const std::string& name) {
  const size_t slash = name.rfind('/');
  std::string n = slash == std::string::npos ? name : name.substr(slash + 1);
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return n;
}

}  // namespace h2oflex::family
