#include "engine/model_footprint.h"

#include "runtime/core/storage_format.h"

namespace h2oflex {

DType matrix_dtype_for(ops::ComputeType ct) {
  return ct == ops::ComputeType::BF16 ? DType::BF16 : DType::F32;
}

policy::ModelFootprint model_footprint(const DecoderModel& model, DType matrix_dtype) {
  policy::ModelFootprint f;
  for (const WeightSpec& s : model.weight_specs()) {
    f.tensor_bytes.push_back(
        tensor_bytes(StorageFormat::plain(stored_dtype(s.role, matrix_dtype)), s.shape));
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

}  // namespace h2oflex
