#include "policy/stage_shape.h"

#include <algorithm>
#include <map>

#include "runtime/core/error.h"

namespace h2oflex::policy {

StageFootprint stage_footprint(const ModelFootprint& full, const StageRange& units) {
  const size_t n_units = full.unit_tensors.size();
  H2OFLEX_INPUT_CHECK(n_units >= 3, "a footprint of ", n_units,
                      " units has no embedding, layer and head");
  H2OFLEX_INPUT_CHECK(units.begin < units.end && units.end <= n_units, "stage units [", units.begin,
                      ", ", units.end, ") outside the model's ", n_units, " units");
  const size_t head = n_units - 1;
  StageFootprint st;
  st.has_embedding = units.contains(0);
  st.has_head = units.contains(head);
  ModelFootprint& f = st.footprint;
  f = full;
  f.tensor_bytes.clear();
  for (ModelFootprint::PackedSizes& s : f.packed_bytes) s.bytes.clear();
  f.unit_tensors.clear();
  std::map<size_t, size_t> local;  // model tensor -> stage tensor
  auto take_unit = [&](size_t u) {
    std::vector<size_t> tensors;
    for (size_t i : full.unit_tensors[u]) {
      auto [it, fresh] = local.try_emplace(i, f.tensor_bytes.size());
      if (fresh) {
        f.tensor_bytes.push_back(full.tensor_bytes[i]);
        for (size_t k = 0; k < full.packed_bytes.size(); ++k) {
          f.packed_bytes[k].bytes.push_back(full.packed_bytes[k].bytes[i]);
        }
        st.model_tensor.push_back(i);
      }
      tensors.push_back(it->second);
    }
    f.unit_tensors.push_back(std::move(tensors));
    st.model_unit.push_back(static_cast<int>(u));
  };
  auto empty_unit = [&] {
    f.unit_tensors.emplace_back();
    st.model_unit.push_back(-1);
  };
  st.has_embedding ? take_unit(0) : empty_unit();
  int64_t layers = 0;
  for (size_t u = std::max<size_t>(units.begin, 1); u < std::min(units.end, head); ++u) {
    take_unit(u);
    ++layers;
  }
  st.has_head ? take_unit(head) : empty_unit();
  H2OFLEX_INPUT_CHECK(layers >= 1, "stage units [", units.begin, ", ", units.end,
                      ") hold no decoder layer");
  f.layers = layers;
  f.fingerprint = 0;
  seal_footprint(f);
  return st;
}

ModelShape stage_model_shape(const ModelShape& model, const StageRange& units) {
  H2OFLEX_INPUT_CHECK(model.footprint.unit_tensors.size() == static_cast<size_t>(model.layers) + 2,
                      "model '", model.name, "': footprint of ",
                      model.footprint.unit_tensors.size(), " units for ", model.layers, " layers");
  StageFootprint st = stage_footprint(model.footprint, units);
  ModelShape s = model;
  s.layers = st.footprint.layers;
  s.footprint = std::move(st.footprint);
  s.other_param_count = st.has_embedding || st.has_head ? model.other_param_count : 0;
  s.head_param_count = st.has_head ? model.head_param_count : 0;
  s.name = detail::concat(model.name, " units ", units.begin, "-", units.end - 1);
  return s;
}

}  // namespace h2oflex::policy
