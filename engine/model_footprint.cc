#include "engine/model_footprint.h"

#include "runtime/core/storage_format.h"

namespace h2oflex {

DType matrix_dtype_for(ops::ComputeType ct) {
  return ops::operand_dtype(ct);
}

WeightFormat weight_format_on_device(const WeightFormat& format, bool cuda) {
  if (cuda && format.mode == WeightFormat::Mode::Stored) return {WeightFormat::Mode::Plain, {}};
  return format;
}

policy::ModelFootprint model_footprint(const DecoderModel& model, DType matrix_dtype,
                                       const WeightFormat& format) {
  policy::ModelFootprint f;
  const auto& specs = model.weight_specs();
  const auto sizes = [&](const std::vector<StorageFormat>& formats, bool packed_only) {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < specs.size(); ++i) {
      const bool packed = compressible(specs[i]) && formats[i].is_packed();
      out.push_back(!packed_only || packed ? tensor_bytes(formats[i], specs[i].shape) : 0);
    }
    return out;
  };
  f.tensor_bytes = sizes(weight_formats(model, matrix_dtype, format, false), false);
  // compress_weight's q4_g64 (under `stored`, a checkpoint's own blocks stay as they are).
  f.packed_bytes.push_back(
      {PackedFormat::Q4G64, sizes(weight_formats(model, matrix_dtype, format, true), true)});
  // The other formats weights can be packed to, unless the checkpoint's own blocks are kept:
  // those are not repacked (a K format cannot be, and repacking adds a second rounding).
  bool own_blocks = false;
  for (size_t i = 0; i < specs.size(); ++i) {
    own_blocks |= model.weight_source(i) != PackedFormat::None;
  }
  const bool repack = !(own_blocks && format.mode == WeightFormat::Mode::Stored);
  for (const PackedFormatRow& row : packed_format_rows()) {
    if (!repack || !row.packable || row.id == PackedFormat::Q4G64) continue;
    f.packed_bytes.push_back(
        {row.id,
         sizes(weight_formats(model, matrix_dtype, WeightFormat::packed_as(row.id), false), true)});
  }
  f.unit_tensors = model.unit_tensors();
  const KvGeometry g = model.kv_geometry();
  f.layers = model.layers();
  f.hidden = model.hidden();
  f.vocab = model.vocab();
  f.query_heads = g.query_heads;
  f.kv_heads = g.kv_heads;
  f.head_dim = g.head_dim;
  f.scratch_elems_per_row = model.scratch_elems_per_row();
  policy::seal_footprint(f);
  return f;
}

policy::ModelShape model_shape_for(const DecoderModel& model, double weight_bytes,
                                   double act_bytes) {
  policy::ModelShape m;
  const KvGeometry g = model.kv_geometry();
  m.name = model.name();
  m.layers = model.layers();
  m.hidden = model.hidden();
  m.heads = g.query_heads;
  m.kv_heads = g.kv_heads;
  m.head_dim = g.head_dim;
  m.vocab = model.vocab();
  m.weight_bytes = weight_bytes;
  m.kv_bytes = weight_bytes;
  m.act_bytes = act_bytes;
  for (const WeightSpec& s : model.weight_specs()) {
    const double n = static_cast<double>(shape_numel(s.shape));
    if (s.layer == 0) {
      m.layer_param_count += n;
      if (s.role == WeightRole::Matrix) m.layer_matrix_params += n;
    } else if (s.layer < 0) {
      m.other_param_count += n;
    }
  }
  // The LM head: the head unit's vocabulary-sized matrix (the token table when tied).
  for (size_t i : model.unit_tensors()[static_cast<size_t>(model.head_unit())]) {
    const WeightSpec& s = model.weight_specs()[i];
    if (s.role == WeightRole::Matrix && s.shape[0] == model.vocab()) {
      m.head_param_count = static_cast<double>(shape_numel(s.shape));
    }
  }
  m.footprint = model_footprint(model, weight_bytes >= 4 ? DType::F32 : DType::BF16);
  return m;
}

}  // namespace h2oflex
