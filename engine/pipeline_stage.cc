#include "engine/pipeline_stage.h"

#include <numeric>

#include "engine/model_footprint.h"

namespace h2oflex {

PipelineStage pipeline_stage(const DecoderModel& model, DType matrix_dtype,
                             const Transport* transport, const WeightFormat& weight_format) {
  const policy::ModelFootprint full = model_footprint(model, matrix_dtype, weight_format);
  PipelineStage st;
  if (transport == nullptr || transport->size() == 1) {
    st.part.footprint = full;
    st.part.model_tensor.resize(full.tensor_bytes.size());
    std::iota(st.part.model_tensor.begin(), st.part.model_tensor.end(), size_t{0});
    st.part.model_unit.resize(full.unit_tensors.size());
    std::iota(st.part.model_unit.begin(), st.part.model_unit.end(), 0);
    st.part.has_embedding = st.part.has_head = true;
    return st;
  }
  st.rank = transport->rank();
  st.stages = transport->size();
  const std::vector<StageRange> ranges =
      plan_stages(full.unit_tensors.size(), static_cast<size_t>(st.stages));
  st.part = policy::stage_footprint(full, ranges[static_cast<size_t>(st.rank)]);
  return st;
}

}  // namespace h2oflex
