#include "engine/pipeline_prepare.h"

#include <algorithm>
#include <iterator>

#include "engine/kv_slots.h"
#include "engine/model_footprint.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace {

// The micro-blocks of a stage's block: as given, or the most stages that can be busy at once
// (the largest divisor of num_gpu_batches not above the stages). One process: the whole block.
int micro_blocks_of(const PipelineSpec& spec, int stages) {
  if (stages <= 1) return 1;
  if (spec.policy.micro_blocks > 0) return spec.policy.micro_blocks;
  int m = std::min(stages, spec.policy.num_gpu_batches);
  while (spec.policy.num_gpu_batches % m != 0) --m;
  return m;
}

// What every stage must agree on, or the stages' messages would not pair up: checked against
// stage 0's, so a mismatch is named instead of hanging or mixing up tensors.
void check_stages_agree(const PipelineSpec& spec, int micro_blocks, int64_t seq) {
  const int64_t mine[] = {spec.policy.gpu_batch_size,
                          spec.policy.num_gpu_batches,
                          micro_blocks,
                          static_cast<int64_t>(spec.prompts.size()),
                          seq,
                          spec.gen.gen_len,
                          spec.projected_steps,
                          spec.gen.stop_at_eos ? 1 : 0};
  int64_t first[std::size(mine)];
  std::copy(std::begin(mine), std::end(mine), first);
  spec.transport->broadcast(first, sizeof first, 0);
  const char* names[] = {"gpu_batch_size",  "num_gpu_batches",      "micro_blocks",
                         "prompts",         "padded prompt length", "gen_len",
                         "projected_steps", "stop_at_eos"};
  for (size_t i = 0; i < std::size(mine); ++i) {
    H2OFLEX_INPUT_CHECK(mine[i] == first[i], "pipeline stage ", spec.transport->rank(), ": ",
                        names[i], " is ", mine[i], " here but ", first[i],
                        " on stage 0 (every stage runs the same block)");
  }
}

}  // namespace

RunShape run_shape(const PipelineSpec& spec) {
  const DecoderModel& m = *spec.model;
  const policy::Policy& p = spec.policy;
  H2OFLEX_INPUT_CHECK(static_cast<int64_t>(spec.prompts.size()) == p.block_size(),
                      "pipeline: ", spec.prompts.size(), " prompts for a block of ",
                      p.gpu_batch_size, " x ", p.num_gpu_batches);
  RunShape r;
  r.padded = pad_prompts(spec.prompts, m.special_tokens().pad);
  const int64_t s = r.padded.seq;
  H2OFLEX_INPUT_CHECK(s + spec.gen.gen_len <= m.max_positions(), "prompt (", s, ") + gen_len (",
                      spec.gen.gen_len, ") exceeds the model's ", m.max_positions(), " positions");
  r.slots = spec.gen.eviction.capacity(static_cast<int>(s), spec.gen.gen_len);
  return r;
}

PipelineStage stage_of(const PipelineSpec& spec) {
  const int processes = spec.transport != nullptr ? spec.transport->size() : 1;
  H2OFLEX_INPUT_CHECK(spec.policy.stages == 0 || spec.policy.stages == processes,
                      "policy.stages: ", spec.policy.stages, " stages but the job has ", processes,
                      " process", processes == 1 ? "" : "es", " (run it as `mpirun -np ",
                      spec.policy.stages, " h2oflex ...`)");
  return pipeline_stage(
      *spec.model, matrix_dtype_for(spec.gen.compute), spec.transport,
      weight_format_on_device(spec.policy.weight_format, spec.device == PipelineDevice::Cuda));
}

policy::MemoryPlan plan_for(const PipelineSpec& spec, const PipelineStage& stage,
                            const RunShape& r) {
  policy::PlanShape shape;
  shape.prompt_len = r.padded.seq;
  shape.gen_len = spec.gen.gen_len;
  shape.kv_slots = r.slots;
  check_kv_row_format(spec.policy.kv_packing(), spec.model->kv_geometry().head_dim);
  shape.kv_format = kv_storage_format(spec.gen.kv_dtype, spec.policy.kv_packing());
  shape.separate_device = spec.device != PipelineDevice::Cpu;
  shape.gpu = spec.device == PipelineDevice::Cuda;
  return policy::plan_memory(stage.part.footprint, spec.policy, shape);
}

PreparedPipeline prepare_pipeline(const PipelineSpec& spec) {
  PreparedPipeline p{stage_of(spec), run_shape(spec), 1, {}};
  p.micro_blocks = micro_blocks_of(spec, p.stage.stages);
  if (p.stage.stages > 1) check_stages_agree(spec, p.micro_blocks, p.shape.padded.seq);
  p.plan = plan_for(spec, p.stage, p.shape);
  policy::check_plan_fits(p.plan, spec.policy, spec.limits);
  return p;
}

}  // namespace h2oflex
