#include "policy/stage_shape.h"

#include <map>

#include "runtime/core/error.h"

namespace h2oflex::policy {

ModelShape stage_model_shape(const ModelShape& model, const StageRange& units) {
  const ModelFootprint& full = model.footprint;
  const size_t n_units = full.unit_tensors.size();
  H2OFLEX_INPUT_CHECK(n_units == static_cast<size_t>(model.layers) + 2, "model '", model.name,
                      "': footprint of ", n_units, " units for ", model.layers, " layers");
  H2OFLEX_INPUT_CHECK(units.begin < units.end && units.end <= n_units, "model '", model.name,
                      "': stage units [", units.begin, ", ", units.end, ") outside its ", n_units,
                      " units");
  const size_t head = n_units - 1;
  const bool first = units.contains(0), last = units.contains(head);

  ModelShape s = model;
  ModelFootprint& f = s.footprint;
  f.tensor_bytes.clear();
  f.compressed_bytes.clear();
  f.unit_tensors.clear();
  std::map<size_t, size_t> local;  // model tensor -> stage tensor
  auto take_unit = [&](size_t u) {
    std::vector<size_t> tensors;
    for (size_t i : full.unit_tensors[u]) {
      auto [it, fresh] = local.try_emplace(i, f.tensor_bytes.size());
      if (fresh) {
        f.tensor_bytes.push_back(full.tensor_bytes[i]);
        if (!full.compressed_bytes.empty()) f.compressed_bytes.push_back(full.compressed_bytes[i]);
      }
      tensors.push_back(it->second);
    }
    f.unit_tensors.push_back(std::move(tensors));
  };
  if (first) {
    take_unit(0);
  } else {
    f.unit_tensors.emplace_back();  // no embedding here
  }
  int64_t layers = 0;
  for (size_t u = std::max<size_t>(units.begin, 1); u < std::min(units.end, head); ++u) {
    take_unit(u);
    ++layers;
  }
  if (last) {
    take_unit(head);
  } else {
    f.unit_tensors.emplace_back();  // no head here
  }
  H2OFLEX_INPUT_CHECK(layers >= 1, "model '", model.name, "': stage units [", units.begin, ", ",
                      units.end, ") hold no decoder layer");
  f.layers = layers;
  f.fingerprint = 0;
  seal_footprint(f);
  s.layers = layers;
  s.other_param_count = first || last ? model.other_param_count : 0;
  s.head_param_count = last ? model.head_param_count : 0;
  s.name = detail::concat(model.name, " units ", units.begin, "-", units.end - 1);
  return s;
}

}  // namespace h2oflex::policy
