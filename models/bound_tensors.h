// A unit's tensors looked up by their spec names, for a family's bind(): the order the engine
// passes them in is the model's unit_tensors() order, and naming them keeps bind() independent
// of which optional tensors (biases, a tied head) a configuration has.
#pragma once

#include <string>
#include <vector>

#include "models/decoder_model.h"
#include "runtime/core/error.h"

namespace h2oflex {

class BoundTensors {
 public:
  BoundTensors(const DecoderModel& model, int unit, const std::vector<Tensor>& tensors)
      : model_(model), unit_(unit), tensors_(tensors) {
    H2OFLEX_CHECK(unit >= 0 && unit < model.units(), model.name(), ": unit ", unit,
                  " out of range");
    H2OFLEX_CHECK(model.unit_tensors()[static_cast<size_t>(unit)].size() == tensors.size(),
                  model.name(), " unit ", unit, ": expected ",
                  model.unit_tensors()[static_cast<size_t>(unit)].size(), " tensors, got ",
                  tensors.size());
  }

  const Tensor& get(const std::string& name) const {
    const std::vector<size_t>& idx = model_.unit_tensors()[static_cast<size_t>(unit_)];
    for (size_t i = 0; i < idx.size(); ++i) {
      if (model_.weight_specs()[idx[i]].name == name) return tensors_[i];
    }
    throw InternalError(
        detail::concat(model_.name(), " unit ", unit_, " has no tensor '", name, "'"));
  }

 private:
  const DecoderModel& model_;
  int unit_;
  const std::vector<Tensor>& tensors_;
};

}  // namespace h2oflex
