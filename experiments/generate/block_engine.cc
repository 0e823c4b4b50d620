#include "experiments/generate/block_engine.h"

#include "engine/compute_device.h"
#include "engine/generator.h"
#include "engine/memory_check.h"
#include "engine/model_footprint.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex::generate {

BlockEngine::BlockEngine(const RunConfig& config, const ModelSource& source)
    : config_(config), source_(source) {
  const ComputeTarget target = resolve_compute_target(config);
  device_ = target.device;
  compute_ = target.compute;
  check_stages_have_policy(config);
  weight_dtype_ = matrix_dtype_for(compute_);
  if (config.policy) {
    H2OFLEX_INPUT_CHECK(!config.policy->is_auto, config.source,
                        ": policy: auto is planned by `run`; give the policy's keys (the plan "
                        "that `h2oflex plan` or `run` printed)");
    policy_ = config.policy->policy;
    limits_ = config.hardware;
  } else {
    // Loaded (and moved to the GPU) once for all blocks — unless even the shortest block of
    // batch_size cannot fit.
    GenerationSettings smallest;
    smallest.gen_len = 1;
    smallest.compute = compute_;
    smallest.kv_dtype = weight_dtype_;
    smallest.device = device_ == PipelineDevice::Cuda ? Device::CUDA : Device::CPU;
    check_in_ram_fits(plan_in_ram(*source.model, smallest, config.batch_size, 1), 0,
                      detail::concat(config.source, ": batch_size ", config.batch_size));
    const bool cuda = device_ == PipelineDevice::Cuda;
    weights_ = load_model_weights(*source.model,
                                  weight_formats(*source.model, weight_dtype_,
                                                 weight_format_on_device({}, cuda), false),
                                  source.producer, source.packed)
                   .on_device(cuda ? Device::CUDA : Device::CPU);
  }
}

int BlockEngine::block_size() const {
  return policy_ ? policy_->block_size() : config_.batch_size;
}

std::string BlockEngine::describe() const {
  const std::string where = std::string(" on ") + pipeline_device_name(device_) + ", compute " +
                            std::string(ops::compute_type_name(compute_));
  return policy_ ? "pipeline, policy " + policy_->summary() + where
                 : detail::concat("in memory, batch ", config_.batch_size, where);
}

std::vector<std::vector<int32_t>> BlockEngine::run(const BlockWork& work) {
  engine::Request req;
  req.model = engine_model_input(source_);
  req.device = device_;
  req.policy = policy_;
  req.limits = limits_;
  req.resident_weights = weights_ ? &*weights_ : nullptr;
  req.subject = detail::concat(config_.source, ": a block of ", work.prompts.size());
  GenerationSettings& opt = req.gen;
  opt.gen_len = work.gen_len;
  opt.stop_at_eos = config_.stop_at_eos;
  opt.compute = compute_;
  opt.kv_dtype = weight_dtype_;
  // Ratios (heavy_ratio, recent_ratio) are fractions of the prompt: resolved for this block's
  // padded prompt length, exactly as `run` resolves them for its prompt_len.
  opt.eviction =
      work.eviction ? *work.eviction : config_.kv_policy.resolve(work.prompt_len, work.gen_len);
  opt.forced = work.forced;
  opt.on_step_logits = work.on_step_logits;
  if (!work.forced.empty()) opt.stop_at_eos = false;
  opt.temperature = work.temperature;
  opt.top_p = work.top_p;
  opt.seed = work.seed;
  opt.row_keys = work.row_keys;
  opt.logit_bias = work.logit_bias;
  opt.presence_penalty = work.presence_penalty;
  opt.device = device_ == PipelineDevice::Cuda ? Device::CUDA : Device::CPU;
  // A short last block on the pipeline is filled up by the engine; weights are placed on every
  // call (once per block).
  req.prompts = work.prompts;
  const engine::Result r = engine::run(req);
  for (const auto& m : r.run.bytes_moved) {
    totals_.bytes_moved[std::string(tier_kind_name(m.src)) + "->" +
                        std::string(tier_kind_name(m.dst))] += m.bytes;
  }
  const auto sequences = static_cast<int64_t>(work.prompts.size());
  totals_.kv_slots += sequences * opt.eviction.capacity(work.prompt_len, work.gen_len);
  totals_.kv_full_slots += sequences * (work.prompt_len + work.gen_len);
  return r.run.tokens;
}

}  // namespace h2oflex::generate
