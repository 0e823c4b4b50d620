#include "experiments/common/run_config.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "engine/compute_device.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/sampling_checks.h"
#include "policy/run_policy.h"
#include "policy/yaml_fields.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"
#include "runtime/dist/transport.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex {

namespace {

template <typename T>
T scalar(const YAML::Node& node, const std::string& key, const std::string& source) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw InputError(detail::concat(source, ": key '", key, "': expected ",
                                    std::is_same_v<T, bool>       ? "true or false"
                                    : std::is_unsigned_v<T>       ? "an integer >= 0"
                                    : std::is_integral_v<T>       ? "an integer"
                                    : std::is_floating_point_v<T> ? "a number"
                                                                  : "a string",
                                    ", got ", quote_excerpt(YAML::Dump(node))));
  }
}

void check_keys(const YAML::Node& node, const std::set<std::string>& allowed,
                const std::string& where, const std::string& source) {
  H2OFLEX_INPUT_CHECK(node.IsMap(), source, ": ", where.empty() ? "the config" : where,
                      " must be a mapping");
  for (const auto& kv : node) {
    H2OFLEX_INPUT_CHECK(kv.first.IsScalar(), source, ": ", where.empty() ? "the config" : where,
                        " has a key that is not a name (line ", kv.first.Mark().line + 1, ")");
    const std::string key = kv.first.Scalar();
    if (allowed.count(key) == 0) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw InputError(detail::concat(source, ": unknown key '", where.empty() ? "" : where + ".",
                                      key, "' (allowed: ", list, ")"));
    }
  }
}

// The kv: section through the one KV parser; its messages name the key and line, prefixed here
// with the config file.
policy::KvPolicy parse_kv(const YAML::Node& kv, const std::string& source) {
  if (!kv || kv.IsNull()) return {};
  try {
    return policy::parse_kv_policy(kv, "kv");
  } catch (const InputError& e) {
    throw InputError(detail::concat(source, ": ", e.what()));
  }
}

}  // namespace

void apply_override(YAML::Node& root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  H2OFLEX_INPUT_CHECK(eq != std::string::npos && eq > 0, "--set '", assignment,
                      "': expected key=value");
  const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  H2OFLEX_INPUT_CHECK(root.IsMap(), "--set ", assignment, ": the config is not a mapping");
  // yaml-cpp nodes are handles: walk by reassigning copies that alias the tree.
  std::vector<YAML::Node> path{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    // A scalar or a list cannot take a key (yaml-cpp would throw a bare exception).
    const YAML::Node existing = std::as_const(path.back())[parts[i]];
    H2OFLEX_INPUT_CHECK(!existing.IsDefined() || existing.IsNull() || existing.IsMap(), "--set ",
                        assignment, ": '", parts[i], "' holds a value, not a mapping of keys");
    YAML::Node child = path.back()[parts[i]];
    if (!child.IsDefined() || child.IsNull()) {
      path.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child = path.back()[parts[i]];
    }
    path.push_back(child);
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError(detail::concat("--set ", key, ": cannot parse value '", value, "'"));
  }
  path.back()[parts.back()] = parsed;
}

namespace {

void merge_into(YAML::Node base, const YAML::Node& patch);

// `stages:` — one entry per pipeline stage, `{set: {policy: ..., hardware: ...}}`: this rank's
// placement and budgets over the config's (a stage with less memory, a disk of its own). The
// job's other settings are every stage's, so only those two keys may be set.
YAML::Node with_this_stage(const YAML::Node& root, const std::string& source) {
  const YAML::Node stages = root["stages"];
  const int processes = in_multi_process_job() ? job_transport()->size() : 1;
  H2OFLEX_INPUT_CHECK(stages.IsSequence(), source,
                      ": stages must be a list of {set: {policy, hardware}}, one per stage");
  H2OFLEX_INPUT_CHECK(static_cast<int>(stages.size()) == processes, source, ": stages lists ",
                      stages.size(), " stage(s) but the job has ", processes, " process",
                      processes == 1 ? "" : "es", " (mpirun -np ", stages.size(), ")");
  for (size_t i = 0; i < stages.size(); ++i) {
    const std::string where = detail::concat("stages[", i, "]");
    check_keys(stages[i], {"set"}, where, source);
    if (stages[i]["set"])
      check_keys(stages[i]["set"], {"policy", "hardware"}, where + ".set", source);
  }
  YAML::Node cfg = YAML::Clone(root);
  cfg.remove("stages");
  const size_t rank = in_multi_process_job() ? static_cast<size_t>(job_transport()->rank()) : 0;
  const YAML::Node mine = stages[rank];
  if (mine["set"]) merge_into(cfg, mine["set"]);
  return cfg;
}

}  // namespace

RunConfig parse_run_config(const YAML::Node& root, const std::string& source) {
  if (root.IsMap() && root["stages"]) {
    const int rank = in_multi_process_job() ? job_transport()->rank() : 0;
    return parse_run_config(
        with_this_stage(root, source),
        in_multi_process_job() ? detail::concat(source, " (stage ", rank, ")") : source);
  }
  check_keys(root,
             {"name", "model", "dummy", "prompt_len", "gen_len", "batch_size", "compute_dtype",
              "compute_device", "seed", "prompt_ids", "temperature", "top_p", "stop_at_eos",
              "projected_steps", "policy", "hardware", "kv", "hardware_profile", "stages"},
             "", source);
  RunConfig c;
  c.source = source;
  H2OFLEX_INPUT_CHECK(root["model"], source, ": missing key 'model'");
  c.model = scalar<std::string>(root["model"], "model", source);
  if (root["name"]) c.name = scalar<std::string>(root["name"], "name", source);
  if (root["dummy"]) c.dummy = scalar<bool>(root["dummy"], "dummy", source);
  if (root["prompt_len"]) c.prompt_len = scalar<int>(root["prompt_len"], "prompt_len", source);
  if (root["gen_len"]) c.gen_len = scalar<int>(root["gen_len"], "gen_len", source);
  if (root["batch_size"]) c.batch_size = scalar<int>(root["batch_size"], "batch_size", source);
  if (root["compute_dtype"]) {
    c.compute_dtype = scalar<std::string>(root["compute_dtype"], "compute_dtype", source);
  }
  if (root["compute_device"]) {
    c.compute_device = scalar<std::string>(root["compute_device"], "compute_device", source);
    H2OFLEX_INPUT_CHECK(
        c.compute_device == "auto" || c.compute_device == "cpu" || c.compute_device == "cuda",
        source, ": compute_device: expected auto, cpu or cuda, got '", c.compute_device, "'");
  }
  if (root["hardware_profile"]) {
    c.hardware_profile = scalar<std::string>(root["hardware_profile"], "hardware_profile", source);
  }
  if (root["seed"]) c.seed = scalar<uint64_t>(root["seed"], "seed", source);
  if (root["temperature"])
    c.temperature = scalar<float>(root["temperature"], "temperature", source);
  if (root["top_p"]) {
    const double p = scalar<double>(root["top_p"], "top_p", source);
    const std::string why = top_p_problem(p);
    H2OFLEX_INPUT_CHECK(why.empty(), source, ": top_p ", why);
    c.top_p = static_cast<float>(p);
  }
  if (root["stop_at_eos"]) c.stop_at_eos = scalar<bool>(root["stop_at_eos"], "stop_at_eos", source);
  if (root["projected_steps"]) {
    c.projected_steps = scalar<int>(root["projected_steps"], "projected_steps", source);
    H2OFLEX_INPUT_CHECK(c.projected_steps >= 0, source, ": projected_steps must be >= 0");
  }
  H2OFLEX_INPUT_CHECK(c.prompt_len >= 1, source, ": prompt_len must be >= 1, got ", c.prompt_len);
  H2OFLEX_INPUT_CHECK(c.gen_len >= 1, source, ": gen_len must be >= 1, got ", c.gen_len);
  H2OFLEX_INPUT_CHECK(c.batch_size >= 1, source, ": batch_size must be >= 1, got ", c.batch_size);
  H2OFLEX_INPUT_CHECK(c.temperature >= 0, source, ": temperature must be >= 0");
  ops::parse_compute_dtype(c.compute_dtype, source + ": compute_dtype");
  if (const YAML::Node ids = root["prompt_ids"]) {
    H2OFLEX_INPUT_CHECK(ids.IsSequence() && ids.size() > 0, source,
                        ": prompt_ids must be a non-empty list of lists of token ids");
    for (size_t i = 0; i < ids.size(); ++i) {
      H2OFLEX_INPUT_CHECK(ids[i].IsSequence() && ids[i].size() > 0, source, ": prompt_ids[", i,
                          "] must be a non-empty list of token ids");
      std::vector<int32_t> p;
      for (size_t j = 0; j < ids[i].size(); ++j) {
        p.push_back(
            scalar<int32_t>(ids[i][j], detail::concat("prompt_ids[", i, "][", j, "]"), source));
      }
      c.prompt_ids.push_back(std::move(p));
    }
    c.batch_size = static_cast<int>(c.prompt_ids.size());
    c.prompt_len = 0;
    for (const auto& p : c.prompt_ids) c.prompt_len = std::max<int>(c.prompt_len, p.size());
  }
  // Absent keys yield invalid yaml-cpp nodes, which must not be assigned.
  // Parsed here, once, with or without a policy: a typo'd key or a bad size must not pass
  // unseen, and every command reads the same typed values.
  try {
    if (root["policy"] && !root["policy"].IsNull()) {
      c.policy = policy::parse_policy_section(root["policy"], "policy");
    }
    if (root["hardware"]) {
      const YAML::Node hardware = root["hardware"];
      const policy::HardwareLimits limits = policy::parse_hardware_limits(hardware, "hardware");
      if (!hardware.IsNull()) c.hardware = limits;
    }
    if (c.policy && !c.policy->is_auto) {
      const std::optional<ops::ComputeType> ct =
          ops::parse_compute_dtype(c.compute_dtype, "compute_dtype");
      policy::check_compute_dtype(c.policy->policy,
                                  ct ? std::optional<DType>(ops::operand_dtype(*ct)) : std::nullopt,
                                  "compute_dtype");
    }
  } catch (const InputError& e) {
    throw InputError(detail::concat(source, ": ", e.what()));
  }
  c.kv_policy = parse_kv(root["kv"], source);
  c.kv = c.kv_policy.resolve(c.prompt_len, c.gen_len);
  return c;
}

namespace {

YAML::Node load_config_root(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = policy::load_yaml_file(path, "config file");
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const auto& o : overrides) apply_override(root, o);
  return root;
}

// Replaces keys of `base` by those of `patch`, descending into mappings present in both.
void merge_into(YAML::Node base, const YAML::Node& patch) {
  for (const auto& kv : patch) {
    H2OFLEX_INPUT_CHECK(kv.first.IsScalar(), "variants: a key in set: is not a name (line ",
                        kv.first.Mark().line + 1, ")");
    const std::string key = kv.first.Scalar();
    if (kv.second.IsMap() && base[key] && base[key].IsMap()) {
      merge_into(base[key], kv.second);
    } else {
      base[key] = YAML::Clone(kv.second);
    }
  }
}

// `label` names the config in messages (the file, or the file with the --set that broke it).
std::vector<RunConfig> load_variants(const std::string& path,
                                     const std::vector<std::string>& overrides,
                                     const std::string& label) {
  YAML::Node root = load_config_root(path, overrides);
  // A relative hardware profile path is relative to the config file.
  auto resolve = [&](RunConfig c) {
    const std::filesystem::path hp(c.hardware_profile);
    if (!c.hardware_profile.empty() && hp.is_relative()) {
      c.hardware_profile = (std::filesystem::path(path).parent_path() / hp).string();
    }
    return c;
  };
  if (!root.IsMap() || !root["variants"]) return {resolve(parse_run_config(root, label))};
  const YAML::Node variants = root["variants"];
  H2OFLEX_INPUT_CHECK(variants.IsSequence() && variants.size() > 0, label,
                      ": variants must be a non-empty list of {name, set}");
  YAML::Node base = YAML::Clone(root);
  base.remove("variants");
  std::vector<RunConfig> out;
  std::set<std::string> names;
  for (size_t i = 0; i < variants.size(); ++i) {
    const YAML::Node v = variants[i];
    const std::string where = detail::concat("variants[", i, "]");
    check_keys(v, {"name", "set"}, where, label);
    // Results are told apart by name: each variant needs its own.
    H2OFLEX_INPUT_CHECK(v["name"], label, ": ", where, ".name is missing (each variant needs one)");
    const std::string name = scalar<std::string>(v["name"], where + ".name", label);
    H2OFLEX_INPUT_CHECK(!name.empty(), label, ": ", where, ".name is empty");
    H2OFLEX_INPUT_CHECK(names.insert(name).second, label, ": ", where, ".name '", name,
                        "' is already another variant's; names must be unique");
    YAML::Node cfg = YAML::Clone(base);
    if (v["set"]) {
      H2OFLEX_INPUT_CHECK(v["set"].IsMap(), label, ": ", where, ".set must be a mapping");
      merge_into(cfg, v["set"]);
    }
    if (v["name"]) cfg["name"] = v["name"];
    out.push_back(resolve(parse_run_config(cfg, detail::concat(label, " (", where, ")"))));
  }
  return out;
}

}  // namespace

std::string RunConfig::origin_of(const std::string& key) const {
  for (auto it = overrides.rbegin(); it != overrides.rend(); ++it) {
    const std::string set = it->substr(0, it->find('='));
    if (key == set || key.rfind(set + ".", 0) == 0) {
      return detail::concat("--set ", *it, " (over ", source, ")");
    }
  }
  return source;
}

std::vector<RunConfig> with_overrides_named(
    const std::string& source, const std::vector<std::string>& overrides,
    const std::function<std::vector<RunConfig>(const std::vector<std::string>&,
                                               const std::string&)>& parse) {
  try {
    std::vector<RunConfig> configs = parse(overrides, source);
    for (RunConfig& c : configs) c.overrides = overrides;
    return configs;
  } catch (const InputError&) {
    if (overrides.empty()) throw;
    // The base alone failing is the file's own fault: report that error as it was.
    try {
      parse({}, source);
    } catch (const InputError&) {
      throw;
    }
    // Else the first --set after which it fails is the culprit.
    std::vector<std::string> applied;
    for (const std::string& o : overrides) {
      applied.push_back(o);
      try {
        parse(applied, source);
      } catch (const InputError&) {
        parse(applied, detail::concat("--set ", o, " (over ", source, ")"));
      }
    }
    throw;
  }
}

std::vector<RunConfig> load_run_config_variants(const std::string& path,
                                                const std::vector<std::string>& overrides) {
  return with_overrides_named(
      path, overrides, [&](const std::vector<std::string>& applied, const std::string& label) {
        return load_variants(path, applied, label);
      });
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  const auto configs = load_run_config_variants(path, overrides);
  H2OFLEX_INPUT_CHECK(configs.size() == 1, path, ": has ", configs.size(),
                      " variants where one config is expected");
  return configs.front();
}

void check_stages_have_policy(const RunConfig& c) {
  if (!in_multi_process_job()) return;
  H2OFLEX_INPUT_CHECK(c.has_policy(), c.source, ": a job over ", job_transport()->size(),
                      " processes (pipeline stages) needs a policy: section");
}

void check_run_paths(const RunConfig& c) {
  if (!c.hardware.disk_path.empty()) {
    check_writable_directory(c.hardware.disk_path,
                             c.origin_of("hardware.disk_path") + ": hardware.disk_path");
  }
}

std::vector<NamedPath> run_config_inputs(const RunConfig& c) {
  std::vector<NamedPath> inputs{{c.source + ": hardware_profile", c.hardware_profile}};
  add_directory_inputs(inputs, c.model, "the model directory '" + c.model + "'");
  return inputs;
}

ops::ComputeType resolve_compute_type(const std::string& compute_dtype, bool on_gpu) {
  if (auto chosen = ops::parse_compute_dtype(compute_dtype, "compute_dtype")) return *chosen;
  return on_gpu ? ops::ComputeType::BF16 : ops::fastest_cpu_compute_type();
}

ComputeTarget resolve_compute_target(const RunConfig& c, bool planning_only) {
  ComputeTarget t;
  t.device = agreed_by_job(
      resolve_compute_device(c.compute_device, c.source + ": compute_device", planning_only));
  // A policy naming a dtype (weight_format / cache_format f32, f16, bf16) stores weights and KV
  // rows in it, so the run computes in it; parse_run_config refused any other compute_dtype.
  const std::optional<DType> named =
      c.policy && !c.policy->is_auto ? c.policy->policy.named_operand_dtype() : std::nullopt;
  if (named && c.compute_dtype == "auto") {
    t.compute = ops::compute_type_of_operand(*named);
    return t;
  }
  t.compute =
      agreed_by_job(resolve_compute_type(c.compute_dtype, t.device == PipelineDevice::Cuda));
  return t;
}

}  // namespace h2oflex
