#include "experiments/run/run_command.h"

#include <cstdio>
#include <utility>

#include "engine/compute_device.h"
#include "engine/model_footprint.h"
#include "engine/pipeline_stage.h"
#include "engine/request.h"
#include "experiments/common/model_source.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/sha256.h"
#include "experiments/plan/plan_command.h"
#include "experiments/run/pipeline_progress.h"
#include "experiments/run/run_summary.h"
#include "experiments/run/stage_results.h"
#include "models/model_positions.h"
#include "policy/run_policy.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/rng.h"
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
// the config's hardware profile. Returns it, and what was planned for the result.
std::pair<policy::Policy, nlohmann::json> plan_run_policy(const RunConfig& c,
                                                          const DecoderModel& model, DType wdtype,
                                                          bool allow_compression) {
  H2OFLEX_INPUT_CHECK(!c.hardware_profile.empty(), c.source,
                      ": policy: auto needs the key 'hardware_profile' (a profile written by "
                      "`h2oflex profile --out hw.yaml`, e.g. experiments/hardware/local_cpu.yaml)");
  const policy::HardwareProfile hw = policy::load_hardware_profile(c.hardware_profile);
  const policy::KvPolicy& kv = c.kv_policy;
  // Weights and KV in the compute dtype; activations move as f32 (the engine's hidden states).
  const policy::ModelShape shape =
      model_shape_for(model, static_cast<double>(dtype_size(wdtype)), 4.0);
  const policy::Policy planned =
      plan_policy(shape, hw, c.prompt_len, c.gen_len, kv, c.hardware, allow_compression);
  const policy::CostEstimate e =
      policy::estimate_cost(shape, hw, planned, {c.prompt_len, c.gen_len, kv});
  std::printf("policy: auto -> %s (planned on %s; predicted total %.3f token/s)\n",
              planned.summary().c_str(), hw.name.c_str(), e.total_tok_s);
  return {planned,
          {{"hardware_profile", c.hardware_profile},
           {"hardware", hw.name},
           {"predicted_total_tok_s", e.total_tok_s},
           {"predicted_prefill_tok_s", e.prefill_tok_s},
           {"predicted_decode_tok_s", e.decode_tok_s},
           {"allow_compression", allow_compression}}};
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
                                const engine::Request& request) {
  const policy::Policy pol = engine::pipeline_policy(request);
  const policy::MemoryPlan plan = engine::plan(request);
  policy::check_plan_fits(plan, pol, request.limits);
  nlohmann::json r;
  r["plan_only"] = true;
  r["model"] = model.name();
  r["policy"] = pol.summary();
  r["block"] = pol.block_size();
  r["kv"] = c.kv_policy.summary();
  r["planned_bytes"] = {{"device", plan.on(TierKind::Device)},
                        {"host", plan.on(TierKind::Host)},
                        {"disk", plan.on(TierKind::Disk)}};
  std::printf("plan: block %d (%s), kv %s\n", pol.block_size(), pol.summary().c_str(),
              c.kv_policy.summary().c_str());
  std::printf("planned: device %s  host %s  disk %s\n",
              format_bytes(static_cast<double>(plan.on(TierKind::Device))).c_str(),
              format_bytes(static_cast<double>(plan.on(TierKind::Host))).c_str(),
              format_bytes(static_cast<double>(plan.on(TierKind::Disk))).c_str());
  if (!c.hardware_profile.empty()) {
    const policy::HardwareProfile hw = policy::load_hardware_profile(c.hardware_profile);
    const policy::CostEstimate e =
        policy::estimate_cost(model_shape_for(model, static_cast<double>(dtype_size(wdtype)), 4.0),
                              hw, pol, {c.prompt_len, c.gen_len, c.kv_policy});
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

// The pipeline's statistics in the result document.
void add_pipeline_figures(const engine::Result& res, const DecoderModel& model, nlohmann::json& r) {
  const PipelineResult& pr = res.run;
  r["projected"] = pr.projected;
  r["decode_steps_run"] = pr.decode_steps_run;
  r["kv_log_compactions"] = pr.kv_log_compactions;
  r["peak_bytes"] = pr.peak_bytes;
  r["planned_bytes"] = pr.planned_bytes;
  if (pr.gpu_total > 0) {
    // The driver's view beside the tier's: the tier's peak includes what the plan charges for
    // the context, cuBLAS and the op temporaries; the driver's counts what is really there.
    r["device_memory"] = {{"tier_peak_bytes", pr.peak_bytes.at("device")},
                          {"planned_bytes", pr.planned_bytes.at("device")},
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
                          {"layer_count", model.layers()},
                          {"head", k.head}};
  };
  for (const auto& [phase, k] : pr.unit_wall_s) r["unit_wall_s"][phase] = by_unit_kind(k);
  for (const auto& [phase, k] : pr.unit_compute_s) r["unit_compute_s"][phase] = by_unit_kind(k);
  nlohmann::json pj;
  for (const auto& [k, v] : policy::describe(res.policy)) {
    std::visit([&pj, &key = k](const auto& x) { pj[key] = x; }, v);
  }
  if (in_multi_process_job()) {
    pj["stages"] = job_transport()->size();
    pj["micro_blocks"] = pr.micro_blocks;
  }
  r["policy"] = pj;
  if (in_multi_process_job()) r["stage_sent_bytes"] = pr.stage_sent_bytes;
}

}  // namespace

nlohmann::json run_experiment_config(const RunConfig& c, bool plan_only) {
  ModelSource src = open_model_source(c.model, c.dummy, c.seed);
  const DecoderModel& model = *src.model;
  const ComputeTarget target = resolve_compute_target(c, plan_only);
  const bool on_gpu = target.device == PipelineDevice::Cuda;
  const DType wdtype = matrix_dtype_for(target.compute);
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

  engine::Request req;
  req.model = engine_model_input(src);
  req.device = target.device;
  req.limits = c.hardware;
  req.projected_steps = c.projected_steps;
  req.gen.gen_len = c.gen_len;
  req.gen.stop_at_eos = c.stop_at_eos;
  req.gen.compute = target.compute;
  req.gen.kv_dtype = wdtype;
  req.gen.eviction = c.kv;
  req.gen.temperature = c.temperature;
  req.gen.top_p = c.top_p;
  req.gen.seed = c.seed;

  nlohmann::json r;
  r["compute_device"] = pipeline_device_name(target.device);
  check_stages_have_policy(c);
  if (c.policy) {
    req.policy = c.policy->policy;
    if (c.policy->is_auto) {
      auto [planned, what] = plan_run_policy(c, model, wdtype, c.policy->allow_compression);
      req.policy = planned;
      r["policy_auto"] = what;
    }
  }
  req.prompts = prompts;
  const engine::Path path = engine::choose_path(req);
  if (path == engine::Path::Pipeline) {
    // One block of the schedule: gpu_batch_size x num_gpu_batches prompts.
    const policy::Policy pol = engine::pipeline_policy(req);
    if (c.prompt_ids.empty()) {
      RunConfig block = c;
      block.batch_size = pol.block_size();
      prompts = seeded_prompts(block, model.vocab());
    }
    H2OFLEX_INPUT_CHECK(static_cast<int>(prompts.size()) == pol.block_size(), c.source, ": ",
                        prompts.size(), " prompts but the policy's block is ", pol.gpu_batch_size,
                        " x ", pol.num_gpu_batches);
    req.prompts = prompts;
    if (plan_only) return plan_only_result(c, model, wdtype, req);
    if (speaks_for_job()) {
      std::fprintf(stderr, "generating: block %d x %d, prompt %d, gen %d, policy %s ...\n",
                   pol.gpu_batch_size, pol.num_gpu_batches, c.prompt_len, c.gen_len,
                   pol.summary().c_str());
    }
  } else {
    std::fprintf(stderr, "generating: batch %zu, prompt %d, gen %d ...\n", prompts.size(),
                 c.prompt_len, c.gen_len);
  }
  req.subject = c.source + ": batch_size " + std::to_string(prompts.size());
  engine::Observer observer;
  if (speaks_for_job()) observer.on_progress = print_progress;
  const engine::Result res = engine::run(req, observer);
  if (path == engine::Path::Pipeline) {
    add_pipeline_figures(res, model, r);
    if (in_multi_process_job()) {
      gather_stage_results(*job_transport(), pipeline_stage(model, wdtype, job_transport()), r);
    }
  } else {
    r["projected"] = false;
  }

  const double batch = static_cast<double>(prompts.size());
  const int capacity = c.kv.capacity(c.prompt_len, c.gen_len);
  r["model"] = model.name();
  r["model_source"] = src.description;
  r["compute_dtype"] = std::string(ops::compute_type_name(target.compute));
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
  // The engine's sizes of this run (as stored: compressed where the policy compresses).
  r["model_bytes"] = res.model_bytes;
  r["cache_bytes"] = res.cache_bytes;
  r["hidden_bytes"] = res.hidden_bytes;
  r["peak_device_bytes"] = res.peak_device_bytes;
  r["prefill"] = phase(res.run.prefill_s, batch * c.prompt_len);
  r["decode"] = phase(res.run.decode_s, batch * (c.gen_len - 1));
  r["total"] = phase(res.run.prefill_s + res.run.decode_s, batch * c.gen_len);
  r["kv"] = {{"policy", c.kv.name()},
             {"sinks", c.kv.sinks},
             {"heavy", c.kv.heavy},
             {"recent", c.kv.recent},
             {"budget", capacity}};
  r["tokens"] = res.run.tokens;
  r["tokens_sha256"] = tokens_sha256(res.run.tokens);
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
