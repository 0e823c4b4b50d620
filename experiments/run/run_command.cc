#include "experiments/run/run_command.h"
#include "experiments/run/run_summary.h"

#include "runtime/core/byte_size.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "engine/compute_device.h"
#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "engine/pipeline.h"
#include "engine/pipeline_stage.h"
#include "experiments/common/memory_check.h"
#include "experiments/common/model_source.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/sha256.h"
#include "experiments/plan/plan_command.h"
#include "experiments/run/pipeline_progress.h"
#include "experiments/run/stage_results.h"
#include "models/model_positions.h"
#include "policy/run_policy.h"
#include "runtime/core/rng.h"
#include "runtime/dist/job_device_link.h"
#include "runtime/dist/transport.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex {

namespace {

// Prompts drawn from the seed: ids uniform over the vocabulary minus the 4 special tokens.
std::vector<std::vector<int32_t>> seeded_prompts(const RunConfig& c, int64_t vocab) {
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(c.batch_size));
  for (int b = 0; b < c.batch_size; ++b) {
    for (int t = 0; t < c.prompt_len; ++t) {
      const uint32_t r = philox4x32(c.seed, 0x70726f6d7074ull + b, t)[0];
      prompts[b].push_back(4 + static_cast<int32_t>(r % static_cast<uint32_t>(vocab - 4)));
    }
  }
  return prompts;
}

// `policy: auto`: the planner's best policy for this model, workload and the run's budgets on
// the config's hardware profile. Sets spec.policy; returns what was planned, for the result.
nlohmann::json plan_run_policy(const RunConfig& c, const DecoderModel& model, DType wdtype,
                               bool allow_compression, PipelineSpec& spec) {
  H2OFLEX_INPUT_CHECK(!c.hardware_profile.empty(), c.source,
                      ": policy: auto needs the key 'hardware_profile' (a profile written by "
                      "`h2oflex profile --out hw.yaml`, e.g. experiments/hardware/local_cpu.yaml)");
  const policy::HardwareProfile hw = policy::load_hardware_profile(c.hardware_profile);
  const policy::KvPolicy& kv = c.kv_policy;
  // Weights and KV in the compute dtype; activations move as f32 (the engine's hidden states).
  const policy::ModelShape shape =
      model_shape_for(model, static_cast<double>(dtype_size(wdtype)), 4.0);
  spec.policy = plan_policy(shape, hw, c.prompt_len, c.gen_len, kv, spec.limits, allow_compression);
  const policy::CostEstimate e =
      policy::estimate_cost(shape, hw, spec.policy, {c.prompt_len, c.gen_len, kv});
  std::printf("policy: auto -> %s (planned on %s; predicted total %.3f token/s)\n",
              spec.policy.summary().c_str(), hw.name.c_str(), e.total_tok_s);
  return {{"hardware_profile", c.hardware_profile},   {"hardware", hw.name},
          {"predicted_total_tok_s", e.total_tok_s},   {"predicted_prefill_tok_s", e.prefill_tok_s},
          {"predicted_decode_tok_s", e.decode_tok_s}, {"allow_compression", allow_compression}};
}

nlohmann::json phase(double latency, double tokens) {
  return {{"latency_s", latency}, {"throughput_tok_s", latency > 0 ? tokens / latency : 0.0}};
}

}  // namespace

std::string tokens_sha256(const std::vector<std::vector<int32_t>>& tokens) {
  return sha256_hex(nlohmann::json(tokens).dump());
}

namespace {

// --plan-only: what the run would hold on each tier (the engine's own memory plan, checked
// against the budgets as a run checks it) and, with a hardware_profile, what the cost model
// predicts for it; nothing is loaded or run.
nlohmann::json plan_only_result(const RunConfig& c, const DecoderModel& model, DType wdtype,
                                const PipelineSpec& spec) {
  const policy::MemoryPlan plan = plan_pipeline(spec);
  policy::check_plan_fits(plan, spec.policy, spec.limits);
  nlohmann::json r;
  r["plan_only"] = true;
  r["model"] = model.name();
  r["policy"] = spec.policy.summary();
  r["block"] = spec.policy.block_size();
  r["kv"] = c.kv_policy.summary();
  r["planned_bytes"] = {{"device", plan.on(TierKind::Device)},
                        {"host", plan.on(TierKind::Host)},
                        {"disk", plan.on(TierKind::Disk)}};
  std::printf("plan: block %d (%s), kv %s\n", spec.policy.block_size(),
              spec.policy.summary().c_str(), c.kv_policy.summary().c_str());
  std::printf("planned: device %s  host %s  disk %s\n",
              format_bytes(static_cast<double>(plan.on(TierKind::Device))).c_str(),
              format_bytes(static_cast<double>(plan.on(TierKind::Host))).c_str(),
              format_bytes(static_cast<double>(plan.on(TierKind::Disk))).c_str());
  if (!c.hardware_profile.empty()) {
    const policy::HardwareProfile hw = policy::load_hardware_profile(c.hardware_profile);
    const policy::CostEstimate e =
        policy::estimate_cost(model_shape_for(model, static_cast<double>(dtype_size(wdtype)), 4.0),
                              hw, spec.policy, {c.prompt_len, c.gen_len, c.kv_policy});
    r["predicted"] = {{"hardware", hw.name},
                      {"prefill_tok_s", e.prefill_tok_s},
                      {"decode_tok_s", e.decode_tok_s},
                      {"total_tok_s", e.total_tok_s},
                      {"prefill_bottleneck", e.prefill.bottleneck},
                      {"decode_bottleneck", e.decode.bottleneck},
                      {"decode_terms_s",
                       {{"ctog", e.decode.ctog},
                        {"gtoc", e.decode.gtoc},
                        {"dtoc", e.decode.dtoc},
                        {"ctod", e.decode.ctod},
                        {"comp", e.decode.comp}}}};
    std::printf(
        "predicted on %s: prefill %.3f  decode %.3f  total %.3f token/s "
        "(bottleneck %s / %s)\n",
        hw.name.c_str(), e.prefill_tok_s, e.decode_tok_s, e.total_tok_s,
        e.prefill.bottleneck.c_str(), e.decode.bottleneck.c_str());
  }
  return r;
}

}  // namespace

nlohmann::json run_experiment_config(const RunConfig& c, bool plan_only) {
  ModelSource src = open_model_source(c.model, c.dummy, c.seed);
  const DecoderModel& model = *src.model;
  // Pipeline stages compute on rank 0's device kind (`auto` depends on each machine's GPUs).
  const PipelineDevice device = agreed_by_job(
      resolve_compute_device(c.compute_device, c.source + ": compute_device", plan_only));
  const bool on_gpu = device == PipelineDevice::Cuda;
  // `auto` is measured by each process; the stages of a job compute in rank 0's choice.
  const ops::ComputeType ct = agreed_by_job(resolve_compute_type(c.compute_dtype, on_gpu));
  const DType wdtype = matrix_dtype_for(ct);
  auto prompts = c.prompt_ids.empty() ? seeded_prompts(c, model.vocab()) : c.prompt_ids;
  for (const auto& p : prompts) {
    for (int32_t id : p) {
      H2OFLEX_INPUT_CHECK(id >= 0 && id < model.vocab(), c.origin_of("prompt_ids"),
                          ": prompt token id ", id, " outside the vocabulary [0, ", model.vocab(),
                          ")");
    }
  }
  check_fits_positions(model, c.prompt_len, c.gen_len, c.source);
  H2OFLEX_INPUT_CHECK(!plan_only || c.has_policy(), c.source,
                      ": --plan-only plans the block schedule; the config needs a policy");
  if (speaks_for_job()) std::fprintf(stderr, "loading %s ...\n", src.description.c_str());

  GenerationSettings opt;
  opt.gen_len = c.gen_len;
  opt.stop_at_eos = c.stop_at_eos;
  opt.compute = ct;
  opt.kv_dtype = wdtype;
  opt.eviction = c.kv;
  opt.temperature = c.temperature;
  opt.top_p = c.top_p;
  opt.seed = c.seed;

  nlohmann::json r;
  GenerateOutput out;
  double peak_device = 0;
  bool compress_weight = false, compress_cache = false;  // the policy's, for the sizes below
  r["compute_device"] = pipeline_device_name(device);
  // On a GPU even a run without a policy goes through the pipeline: everything on the device,
  // one GPU batch of batch_size (the in-RAM path computes on the CPU only).
  check_stages_have_policy(c);
  if (c.has_policy() || on_gpu) {
    // The block schedule over tiers: the batch is gpu_batch_size x num_gpu_batches.
    PipelineSpec spec;
    spec.device = device;
    spec.model = src.model;
    spec.producer = src.producer;
    spec.partial_producer = src.partial;
    spec.weights_key = src.key;
    if (c.has_hardware()) spec.limits = policy::parse_hardware_limits(c.hardware, "hardware");
    if (c.has_policy()) {
      const policy::PolicySection section = policy::parse_policy_section(c.policy, "policy");
      spec.policy = section.policy;
      if (section.is_auto) {
        r["policy_auto"] = plan_run_policy(c, model, wdtype, section.allow_compression, spec);
      }
    } else {
      spec.policy.gpu_batch_size = static_cast<int>(prompts.size());
      spec.policy.w_gpu = spec.policy.cache_gpu = spec.policy.act_gpu = 100;
      spec.policy.w_cpu = spec.policy.cache_cpu = spec.policy.act_cpu = 0;
    }
    spec.gen = opt;
    spec.projected_steps = c.projected_steps;
    spec.transport = job_transport();
    if (on_gpu && !plan_only) spec.device_link = job_device_link();
    if (speaks_for_job()) spec.on_progress = print_progress;
    if (c.prompt_ids.empty()) {
      RunConfig block = c;
      block.batch_size = spec.policy.block_size();
      prompts = seeded_prompts(block, model.vocab());
    }
    H2OFLEX_INPUT_CHECK(static_cast<int>(prompts.size()) == spec.policy.block_size(), c.source,
                        ": ", prompts.size(), " prompts but the policy's block is ",
                        spec.policy.gpu_batch_size, " x ", spec.policy.num_gpu_batches);
    spec.prompts = prompts;
    if (plan_only) return plan_only_result(c, model, wdtype, spec);
    if (speaks_for_job()) {
      std::fprintf(stderr, "generating: block %d x %d, prompt %d, gen %d, policy %s ...\n",
                   spec.policy.gpu_batch_size, spec.policy.num_gpu_batches, c.prompt_len, c.gen_len,
                   spec.policy.summary().c_str());
    }
    PipelineResult pr = run_pipeline(spec);
    out.tokens = pr.tokens;
    out.prefill_s = pr.prefill_s;
    out.decode_s = pr.decode_s;
    peak_device = static_cast<double>(pr.peak_bytes["device"]);
    r["projected"] = pr.projected;
    r["decode_steps_run"] = pr.decode_steps_run;
    r["kv_log_compactions"] = pr.kv_log_compactions;
    r["peak_bytes"] = pr.peak_bytes;
    r["planned_bytes"] = pr.planned_bytes;
    if (pr.gpu_total > 0) {
      // The driver's view beside the tier's: the tier's peak includes what the plan charges for
      // the context, cuBLAS and the op temporaries; the driver's counts what is really there.
      r["device_memory"] = {{"tier_peak_bytes", pr.peak_bytes["device"]},
                            {"planned_bytes", pr.planned_bytes["device"]},
                            {"cuda_used_at_start_bytes", pr.gpu_used_at_start},
                            {"cuda_used_peak_bytes", pr.gpu_used_peak},
                            {"cuda_total_bytes", pr.gpu_total}};
    }
    nlohmann::json moved = nlohmann::json::array();
    for (const auto& m : pr.bytes_moved) {
      moved.push_back({{"phase", m.phase},
                       {"kind", std::string(data_kind_name(m.kind))},
                       {"src", std::string(tier_kind_name(m.src))},
                       {"dst", std::string(tier_kind_name(m.dst))},
                       {"bytes", m.bytes}});
    }
    r["bytes_moved"] = moved;
    for (const auto& [phase, b] : pr.stage_busy_s) {
      r["stage_busy_s"][phase] = {{"compute", b.compute},
                                  {"weight_load", b.weight_load},
                                  {"cache_load", b.cache_load},
                                  {"cache_store", b.cache_store}};
    }
    auto by_unit_kind = [&](const ByUnitKind& k) {
      return nlohmann::json{{"embedding", k.embedding},
                            {"layers", k.layers},
                            {"layer_count", src.model->layers()},
                            {"head", k.head}};
    };
    for (const auto& [phase, k] : pr.unit_wall_s) r["unit_wall_s"][phase] = by_unit_kind(k);
    for (const auto& [phase, k] : pr.unit_compute_s) r["unit_compute_s"][phase] = by_unit_kind(k);
    nlohmann::json pj;
    for (const auto& [k, v] : policy::describe(spec.policy)) {
      std::visit([&pj, &key = k](const auto& x) { pj[key] = x; }, v);
    }
    if (in_multi_process_job()) {
      pj["stages"] = job_transport()->size();
      pj["micro_blocks"] = pr.micro_blocks;
    }
    r["policy"] = pj;
    if (in_multi_process_job()) {
      r["stage_sent_bytes"] = pr.stage_sent_bytes;
      gather_stage_results(*spec.transport, pipeline_stage(model, wdtype, spec.transport), r);
    }
    compress_weight = spec.policy.compress_weight;
    compress_cache = spec.policy.compress_cache;
  } else {
    std::fprintf(stderr, "generating: batch %zu, prompt %d, gen %d ...\n", prompts.size(),
                 c.prompt_len, c.gen_len);
    check_in_ram_fits(plan_in_ram(*src.model, opt, static_cast<int64_t>(prompts.size()),
                                  static_cast<int64_t>(longest_prompt(prompts))),
                      c.has_hardware() ? policy::parse_hardware_limits(c.hardware).host_mem : 0,
                      c.source + ": batch_size " + std::to_string(prompts.size()));
    const ModelWeights weights = load_model_weights(*src.model, wdtype, src.producer);
    out = generate_in_ram(*src.model, weights, prompts, opt);
    r["projected"] = false;
  }

  const double batch = static_cast<double>(prompts.size());
  const int capacity = c.kv.capacity(c.prompt_len, c.gen_len);
  r["model"] = model.name();
  r["model_source"] = src.description;
  r["compute_dtype"] = std::string(ops::compute_type_name(ct));
  if (!on_gpu && !ops::parse_compute_dtype(c.compute_dtype, "compute_dtype")) {
    // What "auto" measured: seconds of one prefill-like and one decode-like GEMM per type.
    for (const ops::ComputeRate& rate : ops::measured_cpu_compute_rates()) {
      r["compute_dtype_auto"][std::string(ops::compute_type_name(rate.type))] = {
          {"prefill_gemm_s", rate.prefill_s}, {"decode_gemm_s", rate.decode_s}};
    }
  }
  r["prompt_len"] = c.prompt_len;
  r["gen_len"] = c.gen_len;
  r["batch_size"] = prompts.size();
  // As stored: compressed where the policy compresses (the storage formats' one size rule).
  const KvGeometry g = model.kv_geometry();
  double model_bytes = 0;
  for (const WeightSpec& s : model.weight_specs()) {
    model_bytes +=
        static_cast<double>(tensor_bytes(stored_format(s, wdtype, compress_weight), s.shape));
  }
  r["model_bytes"] = model_bytes;
  r["cache_bytes"] =
      2.0 * batch * capacity * static_cast<double>(model.layers() * g.kv_heads) *
      static_cast<double>(
          kv_storage_format(opt.kv_dtype, compress_cache).bytes(static_cast<uint64_t>(g.head_dim)));
  r["hidden_bytes"] = batch * c.prompt_len * static_cast<double>(model.hidden()) * 4.0;
  r["peak_device_bytes"] = c.has_policy()
                               ? peak_device
                               : r["model_bytes"].get<double>() + r["cache_bytes"].get<double>();
  r["prefill"] = phase(out.prefill_s, batch * c.prompt_len);
  r["decode"] = phase(out.decode_s, batch * (c.gen_len - 1));
  r["total"] = phase(out.prefill_s + out.decode_s, batch * c.gen_len);
  r["kv"] = {{"policy", c.kv.name()},
             {"sinks", c.kv.sinks},
             {"heavy", c.kv.heavy},
             {"recent", c.kv.recent},
             {"budget", capacity}};
  r["tokens"] = out.tokens;
  r["tokens_sha256"] = tokens_sha256(out.tokens);
  return r;
}

int run_command(const RunOptions& options) {
  const std::vector<RunConfig> configs =
      load_run_config_variants(options.config_path, options.overrides);
  // Before any work: the result must not overwrite an input, and must be writable.
  std::vector<NamedPath> inputs{{"the config file", options.config_path}};
  for (const RunConfig& config : configs) {
    for (NamedPath& in : run_config_inputs(config)) inputs.push_back(std::move(in));
    check_run_paths(config);
  }
  check_output_paths(inputs, {{"--json", options.json_out}});
  std::vector<nlohmann::json> results;
  for (const RunConfig& config : configs) {
    if (configs.size() > 1) std::printf("== %s ==\n", config.name.c_str());
    nlohmann::json result = run_experiment_config(config, options.plan_only);
    result["name"] = config.name;
    if (!options.plan_only) print_summary(result);
    results.push_back(std::move(result));
  }
  if (results.size() > 1 && !options.plan_only) print_comparison(results);
  if (!options.json_out.empty() && speaks_for_job()) {
    const nlohmann::json doc =
        results.size() == 1 ? results.front() : nlohmann::json{{"variants", results}};
    write_file_atomically(options.json_out, doc.dump(2) + "\n");
    std::fprintf(stderr, "wrote %s\n", options.json_out.c_str());
  }
  return 0;
}

}  // namespace h2oflex
