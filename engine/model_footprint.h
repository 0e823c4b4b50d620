// A decoder model's sizes as the memory plan sees them (policy::ModelFootprint): every tensor's
// stored bytes through StorageFormat, its units, and the KV geometry.
#pragma once

#include "models/decoder_model.h"
#include "policy/cost_model.h"
#include "policy/memory_plan.h"

namespace h2oflex {

// The dtype a compute type stores weight matrices in (and the KV cache, by default).
DType matrix_dtype_for(ops::ComputeType ct);

// Matrices stored as `matrix_dtype`, vectors as f32 (as the weight layout and the engine store
// them).
// `stored` as it applies on the compute device. CUDA has kernels for the GGUF block formats,
// tested against their CPU twins, but they have not yet run on a GPU: until that test passes
// on one, a GPU run unpacks a checkpoint's blocks at load (the path every GPU test covers);
// asking for `weight_format: q8_0` etc. on a GPU uses the new kernels.
WeightFormat weight_format_on_device(const WeightFormat& format, bool cuda);

policy::ModelFootprint model_footprint(const DecoderModel& model, DType matrix_dtype,
                                       const WeightFormat& format = {});

// The cost model's view of `model`: dimensions, parameter counts from its tensors, and the
// footprint. `weight_bytes` for weights and KV (2 = fp16/bf16, 4 = f32), `act_bytes` for hidden
// states moved between tiers.
policy::ModelShape model_shape_for(const DecoderModel& model, double weight_bytes = 2,
                                   double act_bytes = 2);

}  // namespace h2oflex
