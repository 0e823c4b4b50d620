// Which part of the model this process runs: all of it, or, in an `mpirun -np S` job, stage
// `rank` of plan_stages (runtime/dist/stage_plan.h) — its units, its tensors, and the memory
// plan's footprint of just those (policy/stage_shape.h), so each stage holds only its weights
// and its layers' KV cache.
#pragma once

#include "models/decoder_model.h"
#include "policy/stage_shape.h"
#include "runtime/core/dtype.h"
#include "runtime/dist/transport.h"

namespace h2oflex {

// Stage units (the footprint's): 0 = the embedding (empty when not here), 1..layers the stage's
// decoder layers, layers + 1 = the head (empty when not here).
struct PipelineStage {
  policy::StageFootprint part;
  int rank = 0, stages = 1;
  int64_t layers() const { return part.footprint.layers; }
  int head_unit() const { return static_cast<int>(layers()) + 1; }
  int first_unit() const { return part.has_embedding ? 0 : 1; }
  int last_unit() const { return part.has_head ? head_unit() : static_cast<int>(layers()); }
  bool first() const { return rank == 0; }
  bool last() const { return rank == stages - 1; }
};

// The stage of this process: the whole model without a transport or with one of size 1 (the
// footprint and its indices exactly the model's), else stage transport->rank(). Weights are
// sized as `weight_format` stores them.
PipelineStage pipeline_stage(const DecoderModel& model, DType matrix_dtype,
                             const Transport* transport, const WeightFormat& weight_format = {});

}  // namespace h2oflex
