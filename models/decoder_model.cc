#include "models/decoder_model.h"

#include "runtime/core/error.h"
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

StorageFormat stored_format(const WeightSpec& spec, DType matrix_dtype, const WeightFormat& format,
                            bool compress, PackedFormat source) {
  const StorageFormat plain = StorageFormat::plain(stored_dtype(spec.role, matrix_dtype));
  const int64_t row = spec.shape.empty() ? 1 : spec.shape.back();
  const auto packed_as = [&](PackedFormat f) {
    return compressible(spec) && row_fits(f, row) ? StorageFormat{plain.dtype, f} : plain;
  };
  switch (format.mode) {
    case WeightFormat::Mode::Plain:
      return compress ? packed_as(PackedFormat::Q4G64) : plain;
    case WeightFormat::Mode::Dtype:
      // The matrices are stored in the compute's operand type; the run resolved its compute type
      // from this format (policy::check_compute_dtype), so the two agree here.
      H2OFLEX_CHECK(matrix_dtype == format.dtype, "weight_format ", format.name(),
                    " with matrices in ", dtype_name(matrix_dtype));
      return compress ? packed_as(PackedFormat::Q4G64) : plain;
    case WeightFormat::Mode::Packed:
      H2OFLEX_INPUT_CHECK(packed_format_row(format.packed).packable,
                          "policy.weight_format: ", packed_format_row(format.packed).name,
                          " is read from GGUF files only (weight_format: stored keeps a file's "
                          "own blocks); formats weights can be packed to: ",
                          packed_format_list([](const PackedFormatRow& r) { return r.packable; }));
      return packed_as(format.packed);
    case WeightFormat::Mode::Stored:
      break;
  }
  if (source != PackedFormat::None) {
    return keeps_own_blocks(spec) && row_fits(source, row) ? StorageFormat{plain.dtype, source}
                                                           : plain;
  }
  return compress ? packed_as(PackedFormat::Q4G64) : plain;
}

std::vector<StorageFormat> weight_formats(const DecoderModel& model, DType matrix_dtype,
                                          const WeightFormat& format, bool compress) {
  std::vector<StorageFormat> out;
  const auto& specs = model.weight_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    out.push_back(stored_format(specs[i], matrix_dtype, format, compress, model.weight_source(i)));
  }
  return out;
}

ModelWeights load_model_weights(const DecoderModel& model,
                                const std::vector<StorageFormat>& formats,
                                const WeightProducer& fill, const PackedWeightProducer& packed) {
  const auto& specs = model.weight_specs();
  H2OFLEX_CHECK(formats.size() == specs.size(), "load_model_weights: ", formats.size(),
                " formats for ", specs.size(), " weights");
  ModelWeights w;
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& spec = specs[i];
    const StorageFormat& f = formats[i];
    if (!f.is_packed()) {
      Tensor t = Tensor::empty(spec.shape, f.dtype);
      fill(spec, f.dtype, t.raw());
      w.tensors.push_back(std::move(t));
      continue;
    }
    Tensor t = Tensor::empty(stored_shape(f, spec.shape), DType::U8).as_packed(f.packed);
    if (packed && model.weight_source(i) == f.packed) {
      packed(spec, f.packed, t.raw());  // the checkpoint's blocks as read
    } else {
      Tensor values = Tensor::empty(spec.shape, DType::F32);
      fill(spec, DType::F32, values.raw());
      ops::pack(values, t);
    }
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
    const StorageFormat f = compressed_format(t.dtype());
    Tensor packed = Tensor::empty(stored_shape(f, spec.shape), DType::U8).as_packed(f.packed);
    ops::pack(values, packed);
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
