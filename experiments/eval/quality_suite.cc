#include "experiments/eval/quality_suite.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "experiments/common/output_paths.h"
#include "experiments/eval/choice_tasks.h"
#include "experiments/eval/eval_setup.h"
#include "experiments/eval/perplexity.h"
#include "experiments/suite/experiment_runner.h"
#include "policy/yaml_fields.h"
#include "runtime/core/error.h"
#include "runtime/core/timer.h"

namespace h2oflex::eval {

namespace fs = std::filesystem;
using policy::key_path;
using policy::read_double;
using policy::read_int;
using policy::read_string;
using policy::require_mapping;

namespace {

// The files `eval suite` writes into --out; the path guard checks exactly these.
constexpr const char* kTableMd = "table.md";
constexpr const char* kTableCsv = "table.csv";
constexpr const char* kResultsJson = "results.json";
constexpr const char* kPlotPy = "quality_plot.py";
constexpr const char* kPlotPng = "quality.png";
constexpr const char* kGroupPlotPy = "groups_plot.py";
constexpr const char* kGroupPlotPng = "groups.png";

std::string resolve(const std::string& suite_path, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute()
             ? p
             : (fs::path(suite_path).parent_path() / path).lexically_normal().string();
}

// Matplotlib script written beside results.json: one panel per task, its metric against the
// budget for each policy, the full cache as a dashed line.
constexpr const char* kQualityPlot =
    R"PY(# Redraws quality.png from results.json: python3 quality_plot.py results.json quality.png
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

doc = json.load(open(sys.argv[1]))
tasks = doc["tasks"]
fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
# One colour per policy in every panel (a policy that is n/a on a task must not shift the others).
cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
colour = {pol: cycle[i % len(cycle)] for i, pol in enumerate(doc["policies"])}
handles = {}
for ax, task in zip(axes[0], tasks):
    key = "perplexity" if task["kind"] == "perplexity" else "acc"
    for pol in doc["policies"]:
        cells = [c for c in doc["cells"] if c["policy"] == pol and c["task"] == task["name"] and key in c]
        if not cells:
            continue
        if cells[0]["budget"] is None:
            h = ax.axhline(cells[0][key], color="black", linestyle="--", label=pol)
        else:
            h, = ax.plot([c["budget"] for c in cells], [c[key] for c in cells], marker="o",
                         color=colour[pol], label=pol)
        handles.setdefault(pol, h)
    ax.set_xlabel("KV budget (fraction of the sequence)")
    ax.set_ylabel(key)
    ax.set_title(task["name"])
fig.legend(handles.values(), handles.keys(), loc="center right", fontsize=8)
fig.suptitle(doc["suite"] + ": " + doc["model"])
fig.tight_layout(rect=(0, 0, 0.88, 1))
fig.savefig(sys.argv[2], dpi=110)
)PY";

// The group plot: accuracy per group (in the task's order) for the chosen policies.
constexpr const char* kGroupPlot =
    R"PY(# Redraws groups.png from results.json: python3 groups_plot.py results.json groups.png
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

doc = json.load(open(sys.argv[1]))
plot = doc["group_plot"]
fig, axes = plt.subplots(1, len(plot["tasks"]), figsize=(5.2 * len(plot["tasks"]), 4.0),
                         squeeze=False)
for ax, task in zip(axes[0], plot["tasks"]):
    groups = None
    for pol in plot["policies"]:
        cells = [c for c in doc["cells"] if c["policy"] == pol and c["task"] == task
                 and "groups" in c
                 and (c["budget"] is None or abs(c["budget"] - plot["budget"]) < 1e-9)]
        if not cells:
            continue
        g = cells[0]["groups"]
        groups = groups or list(g)
        style = "--" if cells[0]["budget"] is None else "-"
        ax.plot(range(len(groups)), [g[k]["acc"] for k in groups], style, marker="o", label=pol)
    if groups:
        ax.set_xticks(range(len(groups)), groups, rotation=45, ha="right", fontsize=8)
    ax.axhline(plot["chance"][task], color="grey", linestyle=":", label="chance")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("accuracy")
    ax.set_title(f'{task}: KV budget {100 * plot["budget"]:.0f}%', fontsize=9)
    ax.legend(fontsize=8)
fig.suptitle(doc["suite"] + ": " + doc["model"].rstrip("/").split("/")[-1], fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
)PY";

std::string fmt(double v, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
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

namespace {

// Every file the suite run reads: the suite, its texts and task files, the hardware profile its
// config names, and every file of the model directory.
std::vector<NamedPath> quality_suite_inputs(const QualitySuite& suite) {
  std::vector<NamedPath> inputs{{"the suite", suite.path}};
  for (const QualityTask& t : suite.tasks) {
    inputs.push_back({suite.path + ": task " + t.name, t.input});
  }
  std::vector<YAML::Node> configs{suite.config};
  for (const QualityVariant& v : suite.variants) configs.push_back(v.config);
  for (const YAML::Node& c : configs) {
    if (c.IsMap() && c["hardware_profile"] && c["hardware_profile"].IsScalar()) {
      inputs.push_back({suite.path + ": hardware_profile", c["hardware_profile"].Scalar()});
    }
  }
  add_directory_inputs(inputs, suite.model, "the model directory '" + suite.model + "'");
  return inputs;
}

}  // namespace

int run_quality_suite(const std::string& suite_path, const std::string& out_dir,
                      const std::string& model_dir) {
  H2OFLEX_INPUT_CHECK(!out_dir.empty(), "eval suite: --out DIR is required");
  QualitySuite suite = load_quality_suite(suite_path);
  if (!model_dir.empty()) suite.model = model_dir;
  H2OFLEX_INPUT_CHECK(!suite.model.empty(), suite_path,
                      ": the suite names no model: give one with --model DIR");
  // Before any cell runs: no file written into --out may be one the suite reads.
  OutputDirectory made(out_dir, "--out");
  check_output_paths(
      quality_suite_inputs(suite),
      files_in(out_dir,
               {kTableMd, kTableCsv, kResultsJson, kPlotPy, kPlotPng, kGroupPlotPy, kGroupPlotPng},
               "--out"));

  // Inputs read once (with the first variant's tokenizer; variants share the model).
  std::vector<std::vector<int32_t>> texts(suite.tasks.size());
  std::vector<ParsedTasks> choices(suite.tasks.size());
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  std::vector<std::string> engines;
  for (size_t v = 0; v < suite.variants.size(); ++v) {
    const QualityVariant& variant = suite.variants[v];
    YAML::Node root = YAML::Clone(suite.config);
    for (const auto& entry : variant.config) {
      root[entry.first.Scalar()] = YAML::Clone(entry.second);
    }
    root["model"] = suite.model;
    apply_eval_defaults(root);
    const std::string where =
        suite.path + ": " + (variant.label.empty() ? "config" : "variant " + variant.label);
    EvalSetup s(parse_run_config(root, where), "eval suite");
    engines.push_back((variant.label.empty() ? "" : variant.label + ": ") + s.engine->describe());
    if (v == 0) {
      for (size_t t = 0; t < suite.tasks.size(); ++t) {
        const QualityTask& task = suite.tasks[t];
        if (task.perplexity) {
          texts[t] = s.tokenizer.encode(read_text_file(task.input, task.name), false);
          H2OFLEX_INPUT_CHECK(!texts[t].empty(), task.input, ": the text has no tokens");
          if (task.tokens && static_cast<size_t>(*task.tokens) < texts[t].size()) {
            texts[t].resize(static_cast<size_t>(*task.tokens));
          }
        } else {
          choices[t] = read_choice_tasks(task.input);
          choices[t].tasks = scorable_tasks(std::move(choices[t].tasks), s.tokenizer, s.bos,
                                            s.source.model->max_positions(), choices[t].errors);
          H2OFLEX_INPUT_CHECK(choices[t].errors.empty(), task.input, " line ",
                              choices[t].errors.empty() ? 0 : choices[t].errors.front().line, ": ",
                              choices[t].errors.empty() ? "" : choices[t].errors.front().reason);
        }
      }
    }
    const int64_t context = s.source.model->max_positions();
    for (const QualityPolicy& p : suite.policies) {
      const std::vector<std::optional<double>> budgets =
          p.budgeted
              ? std::vector<std::optional<double>>(suite.budgets.begin(), suite.budgets.end())
              : std::vector<std::optional<double>>{std::nullopt};
      const std::string label = variant.label.empty() ? p.label : variant.label + " / " + p.label;
      for (const std::optional<double>& budget : budgets) {
        const policy::KvPolicy kv = quality_kv(p, budget.value_or(1.0));
        for (size_t t = 0; t < suite.tasks.size(); ++t) {
          const QualityTask& task = suite.tasks[t];
          nlohmann::ordered_json c;
          c["variant"] = variant.label;
          c["policy"] = label;
          c["budget"] = budget ? nlohmann::ordered_json(*budget) : nlohmann::ordered_json();
          c["task"] = task.name;
          c["kv"] = kv.summary();
          if (kv.resolve(2, 0).prefill_only && task.context == "stream") {
            c["skipped"] = "selects only at a prefill; this task streams its context";
            cells.push_back(c);
            continue;
          }
          const ContextReading reading = context_reading(task.context, kv);
          Stopwatch watch;
          if (task.perplexity) {
            const WindowShape shape = resolve_window_shape(
                task.window, task.stride, context, task.name + ": window", task.name + ": stride");
            const PerplexityResult r = text_perplexity(texts[t], s.bos, shape.window, shape.stride,
                                                       kv, *s.engine, reading);
            c["perplexity"] = r.perplexity;
            c["nll_mean"] = r.nll_mean;
            c["tokens"] = r.nll.size();
          } else {
            const ChoiceResult r =
                score_choice_tasks(choices[t].tasks, s.tokenizer, s.bos, kv, *s.engine, reading);
            c["acc"] = r.acc;
            c["acc_norm"] = r.acc_norm;
            c["n"] = choices[t].tasks.size();
            c["sequences"] = r.sequences;
            if (!r.groups.empty()) c["groups"] = groups_json(r.groups);
          }
          c["eval_s"] = watch.elapsed();
          std::fprintf(stderr, "eval suite: %s%s on %s: %s (%.1f s)\n", label.c_str(),
                       budget ? (" @ " + fmt(*budget, 2)).c_str() : "", task.name.c_str(),
                       task.perplexity
                           ? ("perplexity " + fmt(c["perplexity"].get<double>())).c_str()
                           : ("acc " + fmt(c["acc"].get<double>())).c_str(),
                       c["eval_s"].get<double>());
          cells.push_back(c);
        }
      }
    }
  }

  // The full cache (a row without budget) is what the others are compared with.
  auto full_of = [&](const std::string& task, const char* key) -> std::optional<double> {
    for (const auto& c : cells) {
      if (c["task"] == task && c["budget"].is_null() && c.contains(key) &&
          c["variant"] == suite.variants.front().label) {
        return c[key].get<double>();
      }
    }
    return std::nullopt;
  };
  std::ostringstream md, csv;
  md << "# " << suite.name << "\n\n"
     << suite.description << "\n\nModel: `" << suite.model << "`; engine: ";
  for (size_t v = 0; v < engines.size(); ++v) md << (v ? "; " : "") << engines[v];
  md << ". Budget = the KV slots kept per (layer, head) "
     << "as a fraction of the scored sequence. Perplexity: lower is better (in brackets: the "
        "ratio to the full cache); acc / acc_norm: higher is better.\n\n| policy | budget |";
  csv << "policy,budget,task,kv,perplexity,ratio_to_full,acc,acc_norm\n";
  for (const QualityTask& t : suite.tasks) md << " " << t.name << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < suite.tasks.size(); ++i) md << "---|";
  md << "\n";
  for (size_t i = 0; i < cells.size(); i += suite.tasks.size()) {
    const auto& first = cells[i];
    md << "| " << first["policy"].get<std::string>() << " | "
       << (first["budget"].is_null() ? std::string("—")
                                     : fmt(100 * first["budget"].get<double>(), 0) + "%")
       << " |";
    for (size_t t = 0; t < suite.tasks.size(); ++t) {
      const auto& c = cells[i + t];
      std::string cell;
      std::string ratio, ppl, acc, acc_norm;
      if (c.contains("skipped")) {
        cell = "n/a";
      } else if (c.contains("perplexity")) {
        const double v = c["perplexity"].get<double>();
        ppl = fmt(v, 4);
        cell = fmt(v, 2);
        if (const auto full = full_of(c["task"], "perplexity")) {
          ratio = fmt(v / *full, 4);
          cell += " (" + fmt(v / *full, 3) + "×)";
        }
      } else {
        acc = fmt(c["acc"].get<double>(), 4);
        acc_norm = fmt(c["acc_norm"].get<double>(), 4);
        cell = fmt(c["acc"].get<double>(), 3) + " / " + fmt(c["acc_norm"].get<double>(), 3);
      }
      md << " " << cell << " |";
      csv << c["policy"].get<std::string>() << ","
          << (c["budget"].is_null() ? "" : fmt(c["budget"].get<double>(), 2)) << ","
          << c["task"].get<std::string>() << "," << c["kv"].get<std::string>() << "," << ppl << ","
          << ratio << "," << acc << "," << acc_norm << "\n";
    }
    md << "\n";
  }
  // Per-group accuracy of each choice task that has groups: one table per task.
  for (size_t t = 0; t < suite.tasks.size(); ++t) {
    std::vector<std::string> groups;
    for (const auto& c : cells) {
      if (c["task"] == suite.tasks[t].name && c.contains("groups")) {
        for (const auto& g : c["groups"].items()) groups.push_back(g.key());
        break;
      }
    }
    if (groups.empty()) continue;
    md << "\n## " << suite.tasks[t].name << ": acc by group\n\n| policy | budget |";
    for (const std::string& g : groups) md << " " << g << " |";
    md << "\n|---|---|";
    for (size_t i = 0; i < groups.size(); ++i) md << "---|";
    md << "\n";
    for (const auto& c : cells) {
      if (c["task"] != suite.tasks[t].name) continue;
      md << "| " << c["policy"].get<std::string>() << " | "
         << (c["budget"].is_null() ? std::string("—")
                                   : fmt(100 * c["budget"].get<double>(), 0) + "%")
         << " |";
      for (const std::string& g : groups) {
        md << " "
           << (c.contains("groups") && c["groups"].contains(g)
                   ? fmt(c["groups"][g]["acc"].get<double>(), 2)
                   : std::string("n/a"))
           << " |";
      }
      md << "\n";
    }
  }
  nlohmann::ordered_json doc;
  doc["suite"] = suite.name;
  doc["model"] = suite.model;
  doc["engines"] = engines;
  doc["budgets"] = suite.budgets;
  nlohmann::ordered_json tasks = nlohmann::ordered_json::array(), labels = tasks;
  for (const QualityTask& t : suite.tasks) {
    tasks.push_back({{"name", t.name},
                     {"kind", t.perplexity ? "perplexity" : "choice"},
                     {"input", t.input},
                     {"context", t.context}});
  }
  for (const QualityPolicy& p : suite.policies) labels.push_back(p.label);
  doc["tasks"] = tasks;
  doc["policies"] = labels;
  doc["cells"] = cells;
  if (suite.group_plot) {
    // Chance: the mean over a task's items of 1 / its choices.
    nlohmann::ordered_json chance = nlohmann::ordered_json::object();
    for (size_t t = 0; t < suite.tasks.size(); ++t) {
      if (suite.tasks[t].perplexity) continue;
      double sum = 0;
      for (const ChoiceTask& c : choices[t].tasks) sum += 1.0 / c.choices.size();
      chance[suite.tasks[t].name] = sum / std::max<size_t>(1, choices[t].tasks.size());
    }
    doc["group_plot"] = {{"tasks", suite.group_plot->tasks},
                         {"budget", suite.group_plot->budget},
                         {"policies", suite.group_plot->policies},
                         {"chance", chance}};
  }
  made.keep();
  const fs::path out(out_dir);
  write_file_atomically((out / kTableMd).string(), md.str());
  write_file_atomically((out / kTableCsv).string(), csv.str());
  const std::string json_path = (out / kResultsJson).string();
  write_file_atomically(json_path, doc.dump(2) + "\n");
  const std::string why =
      write_plot_with(kQualityPlot, kPlotPy, json_path, (out / kPlotPng).string());
  if (!why.empty()) std::fprintf(stderr, "eval suite: no plot: %s\n", why.c_str());
  std::string plots = why.empty() ? std::string(",") + kPlotPng : "";
  if (suite.group_plot) {
    const std::string no_group_plot =
        write_plot_with(kGroupPlot, kGroupPlotPy, json_path, (out / kGroupPlotPng).string());
    if (!no_group_plot.empty()) {
      std::fprintf(stderr, "eval suite: no group plot: %s\n", no_group_plot.c_str());
    } else {
      plots += std::string(",") + kGroupPlotPng;
    }
  }
  std::fprintf(stderr, "eval suite: wrote %s/{%s,%s,%s%s}\n", out_dir.c_str(), kTableMd, kTableCsv,
               kResultsJson, plots.c_str());

  std::fputs(md.str().c_str(), stdout);
  return 0;
}

}  // namespace h2oflex::eval
