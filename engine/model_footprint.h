// A decoder model's sizes as the memory plan sees them (policy::ModelFootprint): every tensor's
// stored bytes through StorageFormat, its units, and the KV geometry.
#pragma once

#include "models/decoder_model.h"
#include "policy/memory_plan.h"

namespace h2oflex {

// The dtype a compute type stores weight matrices in (and the KV cache, by default).
DType matrix_dtype_for(ops::ComputeType ct);

// Matrices stored as `matrix_dtype`, vectors as f32 (as the weight layout and the engine store
// them).
policy::ModelFootprint model_footprint(const DecoderModel& model, DType matrix_dtype);

}  // namespace h2oflex
