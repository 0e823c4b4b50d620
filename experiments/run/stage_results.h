// The results of a run over pipeline stages (`mpirun -np S h2oflex run`): every rank sends its
// stage's figures to rank 0, which lists them under "stages" and makes the job-wide fields
// totals over the stages. A collective: every rank calls it once per run, in the same order.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/pipeline_stage.h"
#include "runtime/dist/transport.h"

namespace h2oflex {

// `result` holds this rank's run ("peak_bytes", "bytes_moved", "stage_busy_s", "stage_sent_bytes"
// of its stage). On rank 0 it gets "stages": [{rank, units [first, last] (the model's units),
// layers, peak_bytes, bytes_moved, stage_busy_s, sent_bytes (per phase, to the other stages)},
// ...] in stage order, and its "peak_bytes" (per tier),
// "bytes_moved" (per phase, kind, source and destination), "stage_busy_s" (per phase and
// queue) and "stage_sent_bytes" (per phase) become the sums over the stages. Other ranks' `result`
// is left as it is.
void gather_stage_results(Transport& transport, const PipelineStage& stage, nlohmann::json& result);

}  // namespace h2oflex
