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
#include "experiments/eval/quality_plots.h"
#include "experiments/eval/quality_tables.h"
#include "runtime/core/error.h"
#include "runtime/core/timer.h"

namespace h2oflex::eval {

namespace fs = std::filesystem;

namespace {

// The files `eval suite` writes into --out; the path guard checks exactly these.
constexpr const char* kTableMd = "table.md";
constexpr const char* kTableCsv = "table.csv";
constexpr const char* kResultsJson = "results.json";

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
                       budget ? (" @ " + fixed_decimals(*budget, 2)).c_str() : "",
                       task.name.c_str(),
                       task.perplexity
                           ? ("perplexity " + fixed_decimals(c["perplexity"].get<double>())).c_str()
                           : ("acc " + fixed_decimals(c["acc"].get<double>())).c_str(),
                       c["eval_s"].get<double>());
          cells.push_back(c);
        }
      }
    }
  }

  const QualityTables tables = quality_tables(suite, cells, engines);
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
  write_file_atomically((out / kTableMd).string(), tables.md);
  write_file_atomically((out / kTableCsv).string(), tables.csv);
  const std::string json_path = (out / kResultsJson).string();
  write_file_atomically(json_path, doc.dump(2) + "\n");
  const std::string plots = write_quality_plots(suite, out, json_path);
  std::fprintf(stderr, "eval suite: wrote %s/{%s,%s,%s%s}\n", out_dir.c_str(), kTableMd, kTableCsv,
               kResultsJson, plots.c_str());

  std::fputs(tables.md.c_str(), stdout);
  return 0;
}

}  // namespace h2oflex::eval
