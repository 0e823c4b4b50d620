// `h2oflex plan --stages S`: the cost model's plan for S pipeline stages, beside one machine's.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "experiments/common/output_paths.h"
#include "experiments/plan/plan_command.h"
#include "policy/pipeline_search.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace {

nlohmann::json tier_json(const policy::TierBytes& t) {
  return {{"device", t.device}, {"host", t.host}, {"disk", t.disk}};
}

std::vector<std::string> stage_profile_paths(const PlanOptions& o) {
  if (o.stage_hardware.empty()) {
    H2OFLEX_INPUT_CHECK(o.stages >= 1, "plan: --stages ", o.stages, " must be >= 1");
    return std::vector<std::string>(static_cast<size_t>(o.stages), o.hardware_path);
  }
  H2OFLEX_INPUT_CHECK(o.stages == 1 || o.stages == static_cast<int>(o.stage_hardware.size()),
                      "plan: --stages ", o.stages, " but ", o.stage_hardware.size(),
                      " --stage-hardware profiles (give one per stage)");
  return o.stage_hardware;
}

}  // namespace

int run_pipeline_plan(const PlanOptions& o) {
  const std::vector<std::string> paths = stage_profile_paths(o);
  std::vector<NamedPath> inputs{{"--hardware", o.hardware_path}};
  for (const std::string& p : paths) inputs.push_back({"--stage-hardware", p});
  add_directory_inputs(inputs, o.model, "--model '" + o.model + "'");
  check_output_paths(inputs, {{"--json", o.json_out}});
  H2OFLEX_INPUT_CHECK(o.prompt_len >= 1 && o.gen_len >= 1, "plan: --prompt-len ", o.prompt_len,
                      " and --gen-len ", o.gen_len, " must be >= 1");
  std::vector<policy::HardwareProfile> hw;
  for (const std::string& p : paths) hw.push_back(policy::load_hardware_profile(p));
  const policy::KvPolicy kv = policy::parse_kv_spec(o.kv);
  const policy::ModelShape m = planned_model_shape(o.model, o.prompt_len, o.gen_len);
  const policy::Workload w{o.prompt_len, o.gen_len, kv};
  policy::SearchOptions search;
  search.allow_compression = o.allow_compression;

  const policy::PipelineSearchResult r = policy::search_pipeline_policy(m, hw, w, o.limits, search);
  H2OFLEX_INPUT_CHECK(r.found, "plan: no policy fits ", m.name, " in ", hw.size(),
                      " stages: ", r.why_not);
  const policy::PipelineEstimate& e = r.estimate;
  // One machine of the first stage's kind, with its own best policy, for comparison.
  const policy::SearchResult one = policy::search_policy(m, hw.front(), w, o.limits, search);

  std::printf("model: %s  %zu pipeline stages  prompt %d + gen %d  kv %s\n", m.name.c_str(),
              hw.size(), o.prompt_len, o.gen_len, kv.summary().c_str());
  std::printf("every stage runs this policy; %d blocks in flight = %d sequences\n",
              e.blocks_in_flight, e.blocks_in_flight * r.policy.block_size());
  print_policy(r.policy);
  std::printf(
      "stage  units    layers  hardware      prefill/block  decode step/block  "
      "sends per step (prefill / decode)  peak device / host / disk\n");
  for (size_t j = 0; j < e.stages.size(); ++j) {
    const policy::StageEstimate& s = e.stages[j];
    std::printf("%5zu  %3zu-%-3zu  %6ld  %-12s  %11.3f s  %15.4f s  %15s / %-15s  %s / %s / %s%s\n",
                j, s.units.begin, s.units.end - 1, static_cast<long>(s.layers), hw[j].name.c_str(),
                s.prefill_s, s.decode_step_s, format_bytes(s.send_bytes_prefill).c_str(),
                format_bytes(s.send_bytes_decode_step).c_str(),
                format_bytes(s.cost.peak.device).c_str(), format_bytes(s.cost.peak.host).c_str(),
                format_bytes(s.cost.peak.disk).c_str(),
                s.memory_problem.empty() ? "" : ("  DOES NOT FIT: " + s.memory_problem).c_str());
  }
  std::printf("token ids back (last stage -> first): %s per block and step\n",
              format_bytes(e.ids_bytes_decode_step).c_str());
  std::printf("predicted: prefill %.3f token/s  decode %.3f token/s  total %.3f token/s\n",
              e.prefill_tok_s, e.decode_tok_s, e.total_tok_s);
  std::printf(
      "predicted latency: prefill %.3f s  decode %.3f s  total %.3f s  bubble %.1f%%  "
      "(decode paced by %s)\n",
      e.prefill_s, e.decode_s, e.total_s, 100 * e.bubble, e.decode_bottleneck.c_str());
  if (one.found) {
    std::printf(
        "one %s machine, its own best policy (block %d): total %.3f token/s; the "
        "pipeline is %.2fx that\n",
        hw.front().name.c_str(), one.policy.block_size(), one.estimate.total_tok_s,
        e.total_tok_s / one.estimate.total_tok_s);
  } else {
    std::printf("one %s machine: no policy fits (%s)\n", hw.front().name.c_str(),
                one.why_not.c_str());
  }

  if (!o.json_out.empty()) {
    nlohmann::json j;
    j["model"] = m.name;
    j["prompt_len"] = o.prompt_len;
    j["gen_len"] = o.gen_len;
    j["kv"] = kv.summary();
    j["policy"] = policy_json(r.policy);
    nlohmann::json stages = nlohmann::json::array();
    for (size_t k = 0; k < e.stages.size(); ++k) {
      const policy::StageEstimate& s = e.stages[k];
      stages.push_back({{"units", {s.units.begin, s.units.end - 1}},
                        {"layers", s.layers},
                        {"hardware", hw[k].name},
                        {"prefill_s", s.prefill_s},
                        {"decode_step_s", s.decode_step_s},
                        {"busy_s", s.busy_s},
                        {"send_bytes_prefill", s.send_bytes_prefill},
                        {"send_bytes_decode_step", s.send_bytes_decode_step},
                        {"peak_bytes", tier_json(s.cost.peak)},
                        {"capacity_bytes", tier_json(s.capacity)}});
    }
    j["stages"] = stages;
    j["predicted"] = {{"blocks_in_flight", e.blocks_in_flight},
                      {"prefill_tok_s", e.prefill_tok_s},
                      {"decode_tok_s", e.decode_tok_s},
                      {"total_tok_s", e.total_tok_s},
                      {"prefill_s", e.prefill_s},
                      {"decode_s", e.decode_s},
                      {"bubble", e.bubble},
                      {"ids_bytes_decode_step", e.ids_bytes_decode_step},
                      {"decode_bottleneck", e.decode_bottleneck}};
    if (one.found) {
      j["one_machine"] = {{"policy", policy_json(one.policy)},
                          {"total_tok_s", one.estimate.total_tok_s}};
    }
    write_file_atomically(o.json_out, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace h2oflex
