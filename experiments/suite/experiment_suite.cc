#include "experiments/suite/experiment_suite.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "policy/kv_policy.h"
#include "policy/run_policy.h"
#include "policy/yaml_fields.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace {

// Keys a row's `config:` may hold: the run-config keys (experiments/common/run_config.cc).
constexpr std::initializer_list<const char*> kConfigKeys = {"name",
                                                            "model",
                                                            "dummy",
                                                            "prompt_len",
                                                            "gen_len",
                                                            "batch_size",
                                                            "compute_dtype",
                                                            "seed",
                                                            "prompt_ids",
                                                            "temperature",
                                                            "top_p",
                                                            "stop_at_eos",
                                                            "projected_steps",
                                                            "policy",
                                                            "hardware",
                                                            "kv"};

std::string resolve(const std::string& suite_path, const std::string& p) {
  namespace fs = std::filesystem;
  if (p.empty() || fs::path(p).is_absolute()) return p;
  return (fs::path(suite_path).parent_path() / p).lexically_normal().string();
}

SuiteRow parse_row(const YAML::Node& node, int index, const YAML::Node& defaults,
                   const std::string& path) {
  using namespace policy;
  SuiteRow r;
  r.index = index;
  std::string where = path + ": rows[" + std::to_string(index) + "]";
  require_mapping(node, where,
                  {"label", "system", "hardware_profile", "published_tok_s", "published_batch",
                   "published_projection", "predict", "measure", "band", "config", "peer", "versus",
                   "memory_cap"});
  if (node["label"]) r.label = read_string(node["label"], key_path(where, "label"));
  if (!r.label.empty()) where += " (" + r.label + ")";
  r.where = where;
  // The row's value, else the suite default's; yaml-cpp's default Node is a defined null, so
  // absence is an empty optional.
  auto get = [&](const char* key) -> std::optional<YAML::Node> {
    if (node[key]) return node[key];
    if (defaults.IsMap() && defaults[key]) return defaults[key];
    return std::nullopt;
  };
  if (const auto n = get("system")) r.system = read_string(*n, key_path(where, "system"));
  if (r.system.empty()) r.system = "h2oflex";
  if (const auto n = get("hardware_profile")) {
    r.hardware_profile = resolve(path, read_string(*n, key_path(where, "hardware_profile")));
  }
  if (const auto n = get("published_tok_s")) {
    const double v = read_double(*n, key_path(where, "published_tok_s"));
    H2OFLEX_INPUT_CHECK(v > 0, key_path(where, "published_tok_s"), ": ", v, " must be > 0");
    r.published_tok_s = v;
  }
  if (const auto n = get("published_batch")) {
    r.published_batch = read_string(*n, key_path(where, "published_batch"));
  }
  if (const auto n = get("published_projection")) {
    const std::string v = read_string(*n, key_path(where, "published_projection"));
    H2OFLEX_INPUT_CHECK(v == "mean" || v == "first_decode_step",
                        key_path(where, "published_projection"), ": '", v,
                        "' is not mean or first_decode_step");
    r.published_context = v == "mean" ? DecodeContext::Mean : DecodeContext::FirstStep;
  }
  if (const auto n = get("predict")) r.predict = read_bool(*n, key_path(where, "predict"));
  if (const auto n = get("measure")) r.measure = read_bool(*n, key_path(where, "measure"));
  if (const auto n = get("band")) {
    const double v = read_double(*n, key_path(where, "band"));
    H2OFLEX_INPUT_CHECK(v > 0 && v < 1, key_path(where, "band"), ": ", v, " is not in (0, 1)");
    r.band = v;
  }
  if (const auto n = get("memory_cap")) {
    const std::string key = key_path(where, "memory_cap");
    const uint64_t bytes = parse_byte_size(read_string(*n, key), key);
    H2OFLEX_INPUT_CHECK(bytes >= (64ull << 20), key, ": ", describe_bytes(bytes),
                        " is below 64 MiB (no run fits in it)");
    r.memory_cap = bytes;
  }
  if (node["peer"]) {
    const std::string ppath = key_path(where, "peer");
    require_mapping(node["peer"], ppath, {"script", "args"});
    H2OFLEX_INPUT_CHECK(node["peer"]["script"], key_path(ppath, "script"), ": missing");
    SuiteRow::Peer peer;
    peer.script = resolve(path, read_string(node["peer"]["script"], key_path(ppath, "script")));
    if (const YAML::Node args = node["peer"]["args"]) {
      H2OFLEX_INPUT_CHECK(args.IsMap(), key_path(ppath, "args"), ": expected a mapping");
      for (const auto& kv : args) {
        const std::string key = kv.first.as<std::string>();
        peer.args.emplace_back(key, read_string(kv.second, key_path(key_path(ppath, "args"), key)));
      }
    }
    r.peer = std::move(peer);
    r.predict = false;  // the cost model describes h2oflex, not its peers
    if (r.system == "h2oflex") r.system = "peer";
  }
  if (const YAML::Node v = node["versus"]) {
    const std::string vpath = key_path(where, "versus");
    if (v.IsSequence()) {
      H2OFLEX_INPUT_CHECK(v.size() > 0, vpath, ": expected a label or a non-empty list of labels");
      for (size_t i = 0; i < v.size(); ++i) {
        r.versus.push_back(read_string(v[i], vpath + "[" + std::to_string(i) + "]"));
      }
    } else {
      r.versus.push_back(read_string(v, vpath));
    }
  }
  const std::string cpath = key_path(where, "config");
  const bool default_config = defaults.IsMap() && defaults["config"];
  H2OFLEX_INPUT_CHECK(node["config"] || default_config, cpath,
                      ": missing (every row needs model, prompt_len, gen_len, here or in "
                      "defaults.config)");
  // Defaults' config keys fill in what the row leaves out (a shallow merge).
  r.config = node["config"] ? YAML::Clone(node["config"]) : YAML::Node(YAML::NodeType::Map);
  require_mapping(r.config, cpath, kConfigKeys);
  if (defaults.IsMap() && defaults["config"]) {
    require_mapping(defaults["config"], path + ": defaults.config", kConfigKeys);
    for (const auto& kv : defaults["config"]) {
      const std::string key = kv.first.as<std::string>();
      if (!r.config[key]) r.config[key] = YAML::Clone(kv.second);
    }
  }
  H2OFLEX_INPUT_CHECK(r.config["model"], key_path(cpath, "model"), ": missing");
  r.model = read_string(r.config["model"], key_path(cpath, "model"));
  H2OFLEX_INPUT_CHECK(r.config["prompt_len"] && r.config["gen_len"], cpath,
                      ": needs prompt_len and gen_len");
  r.prompt_len = static_cast<int>(read_int(r.config["prompt_len"], key_path(cpath, "prompt_len")));
  r.gen_len = static_cast<int>(read_int(r.config["gen_len"], key_path(cpath, "gen_len")));
  H2OFLEX_INPUT_CHECK(r.prompt_len >= 1, key_path(cpath, "prompt_len"), ": must be >= 1");
  H2OFLEX_INPUT_CHECK(r.gen_len >= 1, key_path(cpath, "gen_len"), ": must be >= 1");
  // Validate the sections the cost model reads, so a bad suite fails before any row runs.
  if (r.config["policy"]) {
    r.policy = parse_policy_section(r.config["policy"], key_path(cpath, "policy"));
  }
  if (r.config["kv"]) r.kv = parse_kv_policy(r.config["kv"], key_path(cpath, "kv"));
  if (r.config["hardware"]) {
    r.hardware = parse_hardware_limits(r.config["hardware"], key_path(cpath, "hardware"));
  }
  if (r.config["batch_size"]) {
    H2OFLEX_INPUT_CHECK(read_int(r.config["batch_size"], key_path(cpath, "batch_size")) >= 1,
                        key_path(cpath, "batch_size"), ": must be >= 1");
  }
  H2OFLEX_INPUT_CHECK(!r.predict || !r.hardware_profile.empty(),
                      key_path(where, "hardware_profile"),
                      ": missing (a predicted row needs its machine's constants)");
  return r;
}

}  // namespace

Suite parse_suite(const YAML::Node& root, const std::string& path) {
  using namespace policy;
  require_mapping(root, path, {"suite", "description", "repeats", "defaults", "rows"});
  Suite s;
  s.path = path;
  s.name = root["suite"] ? read_string(root["suite"], path + ": suite")
                         : std::filesystem::path(path).stem().string();
  if (root["description"]) s.description = read_string(root["description"], path + ": description");
  if (root["repeats"]) {
    s.repeats = static_cast<int>(read_int(root["repeats"], path + ": repeats"));
    H2OFLEX_INPUT_CHECK(s.repeats >= 1 && s.repeats <= 100, path, ": repeats: ", s.repeats,
                        " is not in [1, 100]");
  }
  YAML::Node defaults;
  if (root["defaults"]) {
    defaults = root["defaults"];
    require_mapping(defaults, path + ": defaults",
                    {"system", "hardware_profile", "published_projection", "predict", "measure",
                     "band", "config", "memory_cap"});
  }
  H2OFLEX_INPUT_CHECK(root["rows"] && root["rows"].IsSequence() && root["rows"].size() > 0, path,
                      ": rows: expected a non-empty list of rows");
  for (size_t i = 0; i < root["rows"].size(); ++i) {
    s.rows.push_back(parse_row(root["rows"][i], static_cast<int>(i), defaults, path));
  }
  // A label names one row: `versus:` and the tables refer to rows by it.
  for (const SuiteRow& r : s.rows) {
    for (const SuiteRow& o : s.rows) {
      if (o.index >= r.index) break;
      H2OFLEX_INPUT_CHECK(r.label.empty() || o.label != r.label, r.where, ": label '", r.label,
                          "' is already rows[", o.index, "]'s; labels must be unique");
    }
  }
  for (const SuiteRow& r : s.rows) {
    for (const std::string& label : r.versus) {
      const bool known = std::any_of(s.rows.begin(), s.rows.end(), [&](const SuiteRow& o) {
        return o.label == label && o.index != r.index;
      });
      H2OFLEX_INPUT_CHECK(known, r.where, ".versus: no other row is labelled '", label, "'");
    }
  }
  return s;
}

std::vector<NamedPath> suite_inputs(const Suite& suite) {
  std::vector<NamedPath> inputs{{"the suite", suite.path}};
  std::set<std::string> model_dirs;  // rows share models: each directory's files once
  for (const SuiteRow& r : suite.rows) {
    inputs.push_back({r.where + ": hardware_profile", r.hardware_profile});
    if (r.peer) inputs.push_back({r.where + ": peer.script", r.peer->script});
    if (model_dirs.insert(r.model).second) {
      add_directory_inputs(inputs, r.model, "the model directory '" + r.model + "'");
    }
  }
  return inputs;
}

Suite load_suite(const std::string& path) {
  return parse_suite(policy::load_yaml_file(path, "suite"), path);
}

}  // namespace h2oflex
