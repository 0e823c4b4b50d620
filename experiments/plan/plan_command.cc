#include "experiments/plan/plan_command.h"

#include "engine/model_footprint.h"
#include "models/gguf/gguf_checkpoint.h"
#include "models/model_catalog.h"
#include "models/model_positions.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "experiments/common/output_paths.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace {

std::shared_ptr<const DecoderModel> planned_model(const std::string& model) {
  if (auto m = published_model(model)) return m;
  // A GGUF file's model (its weights are planned unpacked, as runs load them for now).
  if (is_gguf_path(model)) return GgufCheckpoint::open(model)->model();
  const std::filesystem::path dir(model);
  H2OFLEX_INPUT_CHECK(std::filesystem::is_directory(dir), "model '", model,
                      "': neither a published model name (", published_model_list(),
                      "), nor a model directory, nor a GGUF file (.gguf)");
  return hf_model(dir, dir.filename().string());
}

}  // namespace

policy::ModelShape model_shape_for(const std::string& model, double weight_bytes,
                                   double act_bytes) {
  return model_shape_for(*planned_model(model), weight_bytes, act_bytes);
}

policy::ModelShape planned_model_shape(const std::string& model, int prompt_len, int gen_len) {
  const std::shared_ptr<const DecoderModel> m = planned_model(model);
  check_fits_positions(*m, prompt_len, gen_len, "plan", "--prompt-len", "--gen-len");
  return model_shape_for(*m);
}

policy::Policy plan_policy(const policy::ModelShape& model, const policy::HardwareProfile& hw,
                           int prompt_len, int gen_len, const policy::KvPolicy& kv,
                           const policy::HardwareLimits& limits, bool allow_compression) {
  policy::Workload w{prompt_len, gen_len, kv};
  policy::SearchOptions search;
  search.allow_compression = allow_compression;
  const policy::SearchResult r = policy::search_policy(model, hw, w, limits, search);
  H2OFLEX_INPUT_CHECK(r.found, "policy: auto: no policy fits ", model.name, " (prompt ", prompt_len,
                      ", gen ", gen_len, ", kv ", kv.summary(), ") on ", hw.name, ": ", r.why_not);
  return r.policy;
}

void print_policy(const policy::Policy& p) {
  std::printf("batch: gpu_batch_size %d x num_gpu_batches %d = %d sequences\n", p.gpu_batch_size,
              p.num_gpu_batches, p.block_size());
  std::printf("weights:     gpu %5.1f%%  cpu %5.1f%%  disk %5.1f%%\n", p.w_gpu, p.w_cpu,
              p.w_disk());
  std::printf("cache:       gpu %5.1f%%  cpu %5.1f%%  disk %5.1f%%\n", p.cache_gpu, p.cache_cpu,
              p.cache_disk());
  std::printf("activations: gpu %5.1f%%  cpu %5.1f%%  disk %5.1f%%\n", p.act_gpu, p.act_cpu,
              p.act_disk());
  std::printf("cpu_cache_compute: %s  overlap: %s\n", p.cpu_cache_compute ? "true" : "false",
              p.overlap ? "true" : "false");
  if (p.weight_packing() != PackedFormat::None || p.kv_packing() != PackedFormat::None) {
    const auto name = [](PackedFormat f) {
      return f == PackedFormat::None ? std::string("plain")
                                     : std::string(packed_format_row(f).name);
    };
    // Unpacked weights are named by the policy's key: `stored` keeps a GGUF file's own blocks.
    const std::string weights = p.weight_packing() != PackedFormat::None ? name(p.weight_packing())
                                                                         : p.weight_format.name();
    std::printf("formats: weights %s  cache %s\n", weights.c_str(), name(p.kv_packing()).c_str());
  }
  std::printf("percent (FlexGen order): %s\n", p.percent_string().c_str());
}

nlohmann::json policy_json(const policy::Policy& p) {
  nlohmann::json pj;
  for (const auto& [k, v] : policy::describe(p)) {
    std::visit([&pj, &key = k](const auto& x) { pj[key] = x; }, v);
  }
  return pj;
}

int run_plan(const PlanOptions& o) {
  if (o.stages != 1 || !o.stage_hardware.empty()) return run_pipeline_plan(o);
  std::vector<NamedPath> inputs{{"--hardware", o.hardware_path}};
  add_directory_inputs(inputs, o.model, "--model '" + o.model + "'");
  check_output_paths(inputs, {{"--json", o.json_out}});
  const policy::HardwareProfile hw = policy::load_hardware_profile(o.hardware_path);
  const policy::KvPolicy kv = policy::parse_kv_spec(o.kv);
  H2OFLEX_INPUT_CHECK(o.prompt_len >= 1 && o.gen_len >= 1, "plan: --prompt-len ", o.prompt_len,
                      " and --gen-len ", o.gen_len, " must be >= 1");
  const policy::ModelShape m = planned_model_shape(o.model, o.prompt_len, o.gen_len);
  const policy::Workload w{o.prompt_len, o.gen_len, kv};
  policy::SearchOptions search;
  search.allow_compression = o.allow_compression;
  const policy::SearchResult r = policy::search_policy(m, hw, w, o.limits, search);
  H2OFLEX_INPUT_CHECK(r.found, "plan: no policy fits ", m.name, " on ", hw.name, ": ", r.why_not);
  const policy::Policy& p = r.policy;
  const policy::CostEstimate& e = r.estimate;
  std::printf("model: %s  hardware: %s (%s)  prompt %d + gen %d  kv %s\n", m.name.c_str(),
              hw.name.c_str(), hw.compute_device == policy::ComputeDevice::Gpu ? "gpu" : "cpu",
              o.prompt_len, o.gen_len, kv.summary().c_str());
  // GQA stores kv_heads of the heads' keys and values: the KV per token the plan works with.
  std::printf("attention: %ld query heads, %ld KV heads x %ld dims (%s per token per layer)\n",
              static_cast<long>(m.heads), static_cast<long>(m.kv_heads),
              static_cast<long>(m.head_dim),
              format_bytes(m.kv_token_bytes(p.kv_packing())).c_str());
  print_policy(p);
  std::printf("predicted: prefill %.3f token/s  decode %.3f token/s  total %.3f token/s\n",
              e.prefill_tok_s, e.decode_tok_s, e.total_tok_s);
  std::printf(
      "predicted latency: prefill %.3f s  decode %.3f s  total %.3f s  (bottleneck: %s / %s)\n",
      e.prefill_s, e.decode_s, e.total_s, e.prefill.bottleneck.c_str(),
      e.decode.bottleneck.c_str());
  std::printf("peak memory: device %s of %s  host %s of %s  disk %s of %s\n",
              format_bytes(e.peak.device).c_str(), format_bytes(r.capacity.device).c_str(),
              format_bytes(e.peak.host).c_str(), format_bytes(r.capacity.host).c_str(),
              format_bytes(e.peak.disk).c_str(), format_bytes(r.capacity.disk).c_str());
  std::printf("searched %ld policies in %.2f s\n", r.evaluated, r.seconds);
  if (!o.json_out.empty()) {
    nlohmann::json j;
    j["model"] = m.name;
    j["hardware"] = hw.name;
    j["prompt_len"] = o.prompt_len;
    j["gen_len"] = o.gen_len;
    j["kv"] = kv.summary();
    j["kv_heads"] = m.kv_heads;
    j["policy"] = policy_json(p);
    j["predicted"] = {{"prefill_tok_s", e.prefill_tok_s},
                      {"decode_tok_s", e.decode_tok_s},
                      {"total_tok_s", e.total_tok_s},
                      {"prefill_s", e.prefill_s},
                      {"decode_s", e.decode_s}};
    j["peak_bytes"] = {{"device", e.peak.device}, {"host", e.peak.host}, {"disk", e.peak.disk}};
    j["capacity_bytes"] = {
        {"device", r.capacity.device}, {"host", r.capacity.host}, {"disk", r.capacity.disk}};
    j["search_seconds"] = r.seconds;
    write_file_atomically(o.json_out, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace h2oflex
