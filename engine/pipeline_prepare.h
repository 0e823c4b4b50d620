// The explicit steps before a Pipeline is built, each with its side effect in plain sight:
// this process's stage of the model, the block's padded shape, the stages' agreement on the
// block (a collective: every stage of the job calls it), the memory plan and its budget check
// (a refusal before anything is allocated). The Pipeline's constructor only allocates what the
// prepared plan lists; the stages' turns at the weight layout (barriers) are run_pipeline's.
#pragma once

#include <cstdint>

#include "engine/generator.h"
#include "engine/pipeline.h"
#include "engine/pipeline_stage.h"
#include "policy/memory_plan.h"

namespace h2oflex {

// The block's prompts left-padded, and the KV slots each (sequence, layer, KV head) keeps.
struct RunShape {
  PaddedBatch padded;
  int64_t slots = 0;
};

struct PreparedPipeline {
  PipelineStage stage;
  RunShape shape;
  int micro_blocks = 1;  // the block's parts; each is num_gpu_batches / micro_blocks GPU batches
  policy::MemoryPlan plan;
};

// The stage of this process for `spec` (checks policy.stages against the job's processes).
PipelineStage stage_of(const PipelineSpec& spec);

// The padded prompts and KV slots; InputError when the prompts are not one block or do not fit
// the model's positions.
RunShape run_shape(const PipelineSpec& spec);

// The memory plan of `stage` for `shape` (nothing is allocated).
policy::MemoryPlan plan_for(const PipelineSpec& spec, const PipelineStage& stage,
                            const RunShape& shape);

// Every step above, in order, then (staged) the stages' agreement and the plan's budget check:
// InputError naming what does not fit or which stage disagrees on what.
PreparedPipeline prepare_pipeline(const PipelineSpec& spec);

}  // namespace h2oflex
