#include "models/decoder_model.h"

#include "runtime/core/error.h"
#include "runtime/core/quant4.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

int64_t parameter_count(const DecoderModel& model) {
  int64_t n = 0;
  for (const WeightSpec& s : model.weight_specs()) n += shape_numel(s.shape);
  return n;
}

std::vector<Tensor> ModelWeights::of_unit(const DecoderModel& model, int unit) const {
  std::vector<Tensor> out;
  for (size_t i : model.unit_tensors().at(static_cast<size_t>(unit))) out.push_back(tensors.at(i));
  return out;
}

const Tensor& ModelWeights::named(const DecoderModel& model, const std::string& name) const {
  const auto& specs = model.weight_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == name) return tensors.at(i);
  }
  throw InputError(detail::concat("model '", model.name(), "' has no weight '", name, "'"));
}

ModelWeights ModelWeights::on_device(Device device) const {
  ModelWeights out;
  for (const Tensor& t : tensors) out.tensors.push_back(ops::on_device(t, device));
  return out;
}

ModelWeights load_model_weights(const DecoderModel& model, DType matrix_dtype,
                                const WeightProducer& fill) {
  ModelWeights w;
  for (const WeightSpec& spec : model.weight_specs()) {
    const DType dtype = stored_dtype(spec.role, matrix_dtype);
    Tensor t = Tensor::empty(spec.shape, dtype);
    fill(spec, dtype, t.raw());
    w.tensors.push_back(std::move(t));
  }
  return w;
}

void compress_model_weights(const DecoderModel& model, ModelWeights& weights) {
  for (size_t i = 0; i < model.weight_specs().size(); ++i) {
    const WeightSpec& spec = model.weight_specs()[i];
    if (!compressible(spec)) continue;
    const Tensor& t = weights.tensors.at(i);
    const Tensor values = t.dtype() == DType::F32 ? t : to_dtype(t, DType::F32);
    const int64_t n = spec.shape.back();
    Tensor packed = Tensor::empty({shape_numel(spec.shape) / n, quant4::row_bytes(n)}, DType::U8);
    ops::quantize4(values, packed);
    weights.tensors[i] = std::move(packed);
  }
}

std::vector<std::vector<size_t>> group_units(
    const std::vector<WeightSpec>& specs, int64_t layers,
    const std::function<UnitSide(const WeightSpec&)>& embedding_or_head) {
  const size_t head = static_cast<size_t>(layers) + 1;
  std::vector<std::vector<size_t>> units(head + 1);
  for (size_t i = 0; i < specs.size(); ++i) {
    const int layer = specs[i].layer;
    if (layer >= 0) {
      H2OFLEX_CHECK(layer < layers, "weight '", specs[i].name, "' names layer ", layer, " of ",
                    layers);
      units[static_cast<size_t>(layer) + 1].push_back(i);
      continue;
    }
    const UnitSide side = embedding_or_head(specs[i]);
    if (side != UnitSide::Head) units[0].push_back(i);
    if (side != UnitSide::Embedding) units[head].push_back(i);
  }
  return units;
}

}  // namespace h2oflex
