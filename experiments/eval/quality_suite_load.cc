#include "experiments/eval/quality_suite.h"

#include <filesystem>
#include <limits>

#include "experiments/eval/eval_setup.h"
#include "experiments/eval/perplexity.h"
#include "policy/yaml_fields.h"
#include "runtime/core/error.h"

namespace h2oflex::eval {

namespace fs = std::filesystem;
using policy::key_path;
using policy::read_double;
using policy::read_int;
using policy::read_string;
using policy::require_mapping;

namespace {

std::string resolve(const std::string& suite_path, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute()
             ? p
             : (fs::path(suite_path).parent_path() / path).lexically_normal().string();
}

}  // namespace

policy::KvPolicy quality_kv(const QualityPolicy& p, double budget) {
  YAML::Node kv = YAML::Clone(p.kv);
  if (p.budgeted) {
    if (p.has_heavy) kv["heavy_ratio"] = budget * p.heavy;
    kv["recent_ratio"] = budget * p.recent;
  }
  return policy::parse_kv_policy(kv, "kv");
}

QualitySuite load_quality_suite(const std::string& path) {
  const YAML::Node root = policy::load_yaml_file(path, "quality suite");
  const std::string at = path + ": ";
  require_mapping(root, path,
                  {"suite", "description", "model", "config", "variants", "budgets", "tasks",
                   "policies", "group_plot"});
  QualitySuite s;
  s.path = path;
  H2OFLEX_INPUT_CHECK(root["suite"], at, "suite: (its name) is required");
  s.name = read_string(root["suite"], at + "suite");
  if (root["description"]) s.description = read_string(root["description"], at + "description");
  if (root["model"]) s.model = resolve(path, read_string(root["model"], at + "model"));
  s.config = root["config"] ? YAML::Clone(root["config"]) : YAML::Node(YAML::NodeType::Map);
  if (root["config"]) require_mapping(s.config, at + "config");
  H2OFLEX_INPUT_CHECK(!s.config["model"] && !s.config["kv"], at,
                      "config: holds neither model nor kv (the suite sets them)");
  if (root["variants"]) {
    H2OFLEX_INPUT_CHECK(root["variants"].IsSequence() && root["variants"].size() > 0, at,
                        "variants: a non-empty list of {label, config}");
    for (size_t i = 0; i < root["variants"].size(); ++i) {
      const YAML::Node v = root["variants"][i];
      const std::string key = at + "variants[" + std::to_string(i) + "]";
      require_mapping(v, key, {"label", "config"});
      H2OFLEX_INPUT_CHECK(v["label"] && v["config"], key, ": label and config are required");
      QualityVariant q{read_string(v["label"], key_path(key, "label")), YAML::Clone(v["config"])};
      H2OFLEX_INPUT_CHECK(!q.label.empty(), key_path(key, "label"), ": is empty");
      for (const QualityVariant& other : s.variants) {
        H2OFLEX_INPUT_CHECK(other.label != q.label, key_path(key, "label"), ": '", q.label,
                            "' is already another variant's; labels must be unique");
      }
      require_mapping(q.config, key_path(key, "config"));
      H2OFLEX_INPUT_CHECK(!q.config["model"] && !q.config["kv"], key_path(key, "config"),
                          ": holds neither model nor kv (the suite sets them)");
      s.variants.push_back(q);
    }
  } else {
    s.variants.push_back({"", YAML::Node(YAML::NodeType::Map)});
  }
  H2OFLEX_INPUT_CHECK(root["budgets"] && root["budgets"].IsSequence() && root["budgets"].size() > 0,
                      at, "budgets: a non-empty list of fractions");
  for (size_t i = 0; i < root["budgets"].size(); ++i) {
    const std::string key = at + "budgets[" + std::to_string(i) + "]";
    const double b = read_double(root["budgets"][i], key);
    H2OFLEX_INPUT_CHECK(b > 0 && b <= 1, key, ": ", b, " is not a fraction in (0, 1]");
    s.budgets.push_back(b);
  }
  H2OFLEX_INPUT_CHECK(root["tasks"] && root["tasks"].IsSequence() && root["tasks"].size() > 0, at,
                      "tasks: a non-empty list");
  for (size_t i = 0; i < root["tasks"].size(); ++i) {
    const YAML::Node t = root["tasks"][i];
    const std::string key = at + "tasks[" + std::to_string(i) + "]";
    require_mapping(t, key,
                    {"name", "perplexity", "choice", "window", "stride", "tokens", "context"});
    QualityTask q;
    H2OFLEX_INPUT_CHECK(t["name"], key, ".name is required");
    q.name = read_string(t["name"], key_path(key, "name"));
    H2OFLEX_INPUT_CHECK(!t["perplexity"] != !t["choice"], key,
                        ": give one of perplexity: TEXT or choice: TASKS.jsonl");
    q.perplexity = static_cast<bool>(t["perplexity"]);
    q.input = resolve(path, read_string(q.perplexity ? t["perplexity"] : t["choice"],
                                        key_path(key, q.perplexity ? "perplexity" : "choice")));
    H2OFLEX_INPUT_CHECK(fs::is_regular_file(q.input),
                        key_path(key, q.perplexity ? "perplexity" : "choice"), ": '", q.input,
                        "' does not exist or is not a file");
    H2OFLEX_INPUT_CHECK(q.perplexity || (!t["window"] && !t["stride"] && !t["tokens"]), key,
                        ": window, stride and tokens are for perplexity tasks");
    if (t["tokens"]) {
      q.tokens = read_int(t["tokens"], key_path(key, "tokens"));
      H2OFLEX_INPUT_CHECK(*q.tokens >= 1, key_path(key, "tokens"), ": ", *q.tokens,
                          " must be at least 1");
    }
    if (t["window"]) q.window = read_int(t["window"], key_path(key, "window"));
    if (t["stride"]) q.stride = read_int(t["stride"], key_path(key, "stride"));
    // The model's context bounds the window once it is loaded; the rest is checked here.
    resolve_window_shape(q.window, q.stride, std::numeric_limits<int>::max(),
                         key_path(key, "window"), key_path(key, "stride"));
    if (t["context"]) q.context = read_string(t["context"], key_path(key, "context"));
    H2OFLEX_INPUT_CHECK(is_context_reading(q.context), key_path(key, "context"), ": '", q.context,
                        "' is not ", kContextReadings);
    s.tasks.push_back(q);
  }
  H2OFLEX_INPUT_CHECK(
      root["policies"] && root["policies"].IsSequence() && root["policies"].size() > 0, at,
      "policies: a non-empty list");
  for (size_t i = 0; i < root["policies"].size(); ++i) {
    const YAML::Node p = root["policies"][i];
    const std::string key = at + "policies[" + std::to_string(i) + "]";
    require_mapping(p, key, {"label", "kv", "heavy", "recent"});
    QualityPolicy q;
    H2OFLEX_INPUT_CHECK(p["label"] && p["kv"], key, ": label and kv are required");
    q.label = read_string(p["label"], key_path(key, "label"));
    q.kv = YAML::Clone(p["kv"]);
    require_mapping(q.kv, key_path(key, "kv"));
    for (const char* k : {"heavy_ratio", "recent_ratio", "heavy_tokens", "recent_tokens"}) {
      H2OFLEX_INPUT_CHECK(!q.kv[k], key_path(key_path(key, "kv"), k),
                          ": the suite sets the counts from the budget (give heavy / recent "
                          "shares instead)");
    }
    q.budgeted = p["heavy"] || p["recent"];
    q.has_heavy = static_cast<bool>(p["heavy"]);
    if (p["heavy"]) q.heavy = read_double(p["heavy"], key_path(key, "heavy"));
    if (p["recent"]) q.recent = read_double(p["recent"], key_path(key, "recent"));
    H2OFLEX_INPUT_CHECK(
        !q.budgeted || (q.heavy >= 0 && q.recent > 0 && std::fabs(q.heavy + q.recent - 1) < 1e-9),
        key, ": heavy + recent are shares of the budget: >= 0, recent > 0, sum 1");
    // Checks the policy once, at the smallest budget, so a bad row fails before any work.
    quality_kv(q, s.budgets.front());
    for (const QualityPolicy& other : s.policies) {
      H2OFLEX_INPUT_CHECK(other.label != q.label, key_path(key, "label"), ": '", q.label,
                          "' is already another policy's; labels must be unique");
    }
    s.policies.push_back(q);
  }
  if (const YAML::Node g = root["group_plot"]) {
    const std::string key = at + "group_plot";
    require_mapping(g, key, {"tasks", "budget", "policies"});
    H2OFLEX_INPUT_CHECK(g["tasks"] && g["budget"] && g["policies"], key,
                        ": tasks, budget and policies are required");
    GroupPlot plot;
    H2OFLEX_INPUT_CHECK(g["tasks"].IsSequence() && g["tasks"].size() > 0, key_path(key, "tasks"),
                        ": a non-empty list of choice task names");
    for (size_t i = 0; i < g["tasks"].size(); ++i) {
      const std::string k = key_path(key, "tasks") + "[" + std::to_string(i) + "]";
      const std::string name = read_string(g["tasks"][i], k);
      H2OFLEX_INPUT_CHECK(
          std::any_of(s.tasks.begin(), s.tasks.end(),
                      [&](const QualityTask& t) { return t.name == name && !t.perplexity; }),
          k, ": '", name, "' is not a choice task of this suite");
      plot.tasks.push_back(name);
    }
    plot.budget = read_double(g["budget"], key_path(key, "budget"));
    H2OFLEX_INPUT_CHECK(
        std::find(s.budgets.begin(), s.budgets.end(), plot.budget) != s.budgets.end(),
        key_path(key, "budget"), ": ", plot.budget, " is not one of budgets:");
    H2OFLEX_INPUT_CHECK(g["policies"].IsSequence() && g["policies"].size() > 0,
                        key_path(key, "policies"), ": a non-empty list of policy labels");
    for (size_t i = 0; i < g["policies"].size(); ++i) {
      const std::string k = key_path(key, "policies") + "[" + std::to_string(i) + "]";
      const std::string label = read_string(g["policies"][i], k);
      H2OFLEX_INPUT_CHECK(std::any_of(s.policies.begin(), s.policies.end(),
                                      [&](const QualityPolicy& p) { return p.label == label; }),
                          k, ": '", label, "' is not a policy label of this suite");
      plot.policies.push_back(label);
    }
    s.group_plot = plot;
  }
  return s;
}

}  // namespace h2oflex::eval
