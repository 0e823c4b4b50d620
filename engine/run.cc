#include "engine/request.h"

#include "engine/memory_check.h"
#include "engine/model_footprint.h"
#include "runtime/core/storage_format.h"
#include "runtime/dist/job_device_link.h"
#include "runtime/dist/transport.h"

namespace h2oflex::engine {

namespace {

Device compute_device_of(const Request& r) {
  return r.device == PipelineDevice::Cuda ? Device::CUDA : Device::CPU;
}

// The pipeline takes exactly one block: a short list of prompts is filled with copies of its
// last prompt (and its per-row settings), whose results the caller drops.
PipelineSpec pipeline_spec(const Request& r) {
  PipelineSpec spec;
  spec.device = r.device;
  spec.model = r.model.model;
  spec.producer = r.model.producer;
  spec.partial_producer = r.model.partial_producer;
  spec.packed_producer = r.model.packed_producer;
  spec.weights_key = r.model.weights_key;
  spec.policy = pipeline_policy(r);
  spec.limits = r.limits;
  spec.gen = r.gen;
  spec.projected_steps = r.projected_steps;
  spec.transport = job_transport();
  spec.prompts = r.prompts;
  const size_t block = static_cast<size_t>(spec.policy.block_size());
  H2OFLEX_INPUT_CHECK(!r.prompts.empty() && r.prompts.size() <= block, r.subject, ": ",
                      r.prompts.size(), " prompts for a block of ", block);
  spec.prompts.resize(block, r.prompts.back());
  GenerationSettings& g = spec.gen;
  if (!g.row_keys.empty()) g.row_keys.resize(block, g.row_keys.back());
  if (!g.logit_bias.empty()) g.logit_bias.resize(block, g.logit_bias.back());
  if (!g.presence_penalty.empty()) g.presence_penalty.resize(block, g.presence_penalty.back());
  if (!g.forced.empty()) g.forced.resize(block, g.forced.back());
  return spec;
}

// The sizes a run reports, by the storage formats' one size rule: packed where the policy or
// the checkpoint packs.
void fill_sizes(const Request& r, const WeightFormat& weight_format, bool compress_weight,
                PackedFormat kv_packing, Result& out) {
  const DecoderModel& model = *r.model.model;
  const DType wdtype = matrix_dtype_for(r.gen.compute);
  const std::vector<StorageFormat> formats =
      weight_formats(model, wdtype, weight_format, compress_weight);
  for (size_t i = 0; i < formats.size(); ++i) {
    out.model_bytes += static_cast<double>(tensor_bytes(formats[i], model.weight_specs()[i].shape));
  }
  const double batch = static_cast<double>(r.prompts.size());
  const int prompt_len = static_cast<int>(longest_prompt(r.prompts));
  const int capacity = r.gen.eviction.capacity(prompt_len, r.gen.gen_len);
  const KvGeometry g = model.kv_geometry();
  out.cache_bytes =
      2.0 * batch * capacity * static_cast<double>(model.layers() * g.kv_heads) *
      static_cast<double>(
          kv_storage_format(r.gen.kv_dtype, kv_packing).bytes(static_cast<uint64_t>(g.head_dim)));
  out.hidden_bytes = batch * prompt_len * static_cast<double>(model.hidden()) * 4.0;
}

}  // namespace

Path choose_path(const Request& r) {
  if (r.policy) return Path::Pipeline;
  if (r.device != PipelineDevice::Cpu && r.resident_weights == nullptr) return Path::Pipeline;
  return Path::InRam;
}

policy::Policy pipeline_policy(const Request& r) {
  if (r.policy) return *r.policy;
  policy::Policy p;
  p.gpu_batch_size = static_cast<int>(r.prompts.size());
  p.w_gpu = p.cache_gpu = p.act_gpu = 100;
  p.w_cpu = p.cache_cpu = p.act_cpu = 0;
  return p;
}

policy::MemoryPlan plan(const Request& r) {
  return plan_pipeline(pipeline_spec(r));
}

Result run(const Request& r, const Observer& observer) {
  Result out;
  out.path = choose_path(r);
  if (out.path == Path::Pipeline) {
    PipelineSpec spec = pipeline_spec(r);
    if (r.device == PipelineDevice::Cuda) spec.device_link = job_device_link();
    spec.on_progress = observer.on_progress;
    if (observer.stop_requested) spec.gen.stop_requested = observer.stop_requested;
    out.policy = spec.policy;
    out.run = run_pipeline(spec);
    out.run.tokens.resize(r.prompts.size());
    out.stopped = out.run.stopped;
    fill_sizes(r, spec.policy.weight_format, spec.policy.compress_weight, spec.policy.kv_packing(),
               out);
    out.peak_device_bytes = r.policy ? static_cast<double>(out.run.peak_bytes["device"])
                                     : out.model_bytes + out.cache_bytes;
    return out;
  }
  GenerationSettings gen = r.gen;
  gen.device = compute_device_of(r);
  if (observer.stop_requested) gen.stop_requested = observer.stop_requested;
  check_in_ram_fits(plan_in_ram(*r.model.model, gen, static_cast<int64_t>(r.prompts.size()),
                                static_cast<int64_t>(longest_prompt(r.prompts))),
                    r.limits.host_mem, r.subject);
  std::optional<ModelWeights> loaded;
  if (r.resident_weights == nullptr) {  // on the CPU (choose_path)
    const WeightFormat in_ram = weight_format_on_device({}, /*cuda=*/false);
    loaded = load_model_weights(
        *r.model.model,
        weight_formats(*r.model.model, matrix_dtype_for(gen.compute), in_ram, false),
        r.model.producer, r.model.packed_producer);
  }
  const GenerateOutput g = generate_in_ram(
      *r.model.model, r.resident_weights ? *r.resident_weights : *loaded, r.prompts, gen);
  out.run.tokens = g.tokens;
  out.run.prefill_s = g.prefill_s;
  out.run.decode_s = g.decode_s;
  out.run.kept = g.kept;
  out.run.stopped = out.stopped = g.stopped;
  fill_sizes(r, WeightFormat{}, false, r.gen.cache_format, out);
  out.peak_device_bytes = out.model_bytes + out.cache_bytes;
  return out;
}

}  // namespace h2oflex::engine
