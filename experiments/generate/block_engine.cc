#include "experiments/generate/block_engine.h"

#include "engine/compute_device.h"
#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "engine/pipeline.h"
#include "experiments/common/memory_check.h"
#include "runtime/dist/job_device_link.h"
#include "runtime/dist/transport.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex::generate {

BlockEngine::BlockEngine(const RunConfig& config, const ModelSource& source)
    : config_(config), source_(source) {
  device_ = agreed_by_job(
      resolve_compute_device(config.compute_device, config.source + ": compute_device"));
  // `auto` is measured by each process; pipeline stages compute in rank 0's choice.
  compute_ =
      agreed_by_job(resolve_compute_type(config.compute_dtype, device_ == PipelineDevice::Cuda));
  check_stages_have_policy(config);
  weight_dtype_ = matrix_dtype_for(compute_);
  if (config.has_policy()) {
    policy_ = policy::parse_policy(config.policy, "policy");
    if (config.has_hardware()) limits_ = policy::parse_hardware_limits(config.hardware, "hardware");
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
    weights_ = load_model_weights(*source.model, weight_dtype_, source.producer)
                   .on_device(device_ == PipelineDevice::Cuda ? Device::CUDA : Device::CPU);
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
  GenerationSettings opt;
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
  if (!policy_) {
    check_in_ram_fits(plan_in_ram(*source_.model, opt, static_cast<int64_t>(work.prompts.size()),
                                  static_cast<int64_t>(longest_prompt(work.prompts))),
                      0, detail::concat(config_.source, ": a block of ", work.prompts.size()));
    return generate_in_ram(*source_.model, *weights_, work.prompts, opt).tokens;
  }

  // The pipeline takes exactly one block: a short last block is filled with copies of its last
  // prompt, whose results are dropped. Weights are placed on every call (once per block).
  PipelineSpec spec;
  spec.device = device_;
  spec.model = source_.model;
  spec.producer = source_.producer;
  spec.partial_producer = source_.partial;
  spec.weights_key = source_.key;
  spec.policy = *policy_;
  spec.limits = limits_;
  spec.gen = opt;
  spec.transport = job_transport();
  if (device_ == PipelineDevice::Cuda) spec.device_link = job_device_link();
  spec.prompts = work.prompts;
  spec.prompts.resize(static_cast<size_t>(policy_->block_size()), work.prompts.back());
  if (!spec.gen.row_keys.empty()) {
    spec.gen.row_keys.resize(spec.prompts.size(), spec.gen.row_keys.back());
  }
  if (!spec.gen.logit_bias.empty()) {
    spec.gen.logit_bias.resize(spec.prompts.size(), spec.gen.logit_bias.back());
  }
  if (!spec.gen.presence_penalty.empty()) {
    spec.gen.presence_penalty.resize(spec.prompts.size(), spec.gen.presence_penalty.back());
  }
  if (!spec.gen.forced.empty()) spec.gen.forced.resize(spec.prompts.size(), work.forced.back());
  PipelineResult result = run_pipeline(spec);
  result.tokens.resize(work.prompts.size());
  return result.tokens;
}

}  // namespace h2oflex::generate
