// `h2oflex eval suite SUITE.yaml --out DIR`: the quality table of KV policies — every policy at
// every budget on every task (perplexity of a text, multiple-choice accuracy), on one model and
// one engine — written as DIR/table.md, table.csv, results.json and quality.png (and groups.png
// when the suite asks for a plot of a task's groups, e.g. retrieval accuracy by depth). Schema in
// experiments/README.md ("Quality suites").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "policy/kv_policy.h"

namespace h2oflex::eval {

struct QualityTask {
  std::string name;
  bool perplexity = true;  // else choice
  std::string input;       // the text or the tasks file (resolved against the suite's directory)
  std::optional<int64_t> window, stride;  // perplexity; absent = eval's defaults
  std::optional<int64_t> tokens;          // perplexity: score only the text's first tokens
  std::string context = "stream";
};

struct QualityPolicy {
  std::string label;
  YAML::Node kv;         // the kv: mapping without its counts that scale with the budget
  bool budgeted = true;  // false: one row, no budget (full)
  // Shares of the budget: heavy_ratio = budget * heavy (only when `heavy` is given: streaming
  // takes no heavy count), recent_ratio = budget * recent.
  bool has_heavy = false;
  double heavy = 0, recent = 0;
};

// A variant of the engine for all policies (e.g. 4-bit weights): its keys replace the suite's
// config keys of the same name.
struct QualityVariant {
  std::string label;  // "" for the suite's config alone
  YAML::Node config;
};

// A plot of choice tasks' per-group accuracy (one panel per task; x: the groups in order) for
// some policies at one budget (the unbudgeted ones at theirs).
struct GroupPlot {
  std::vector<std::string> tasks;
  double budget = 0;
  std::vector<std::string> policies;  // labels
};

struct QualitySuite {
  std::string path, name, description;
  std::string model;  // resolved; empty: given on the command line (--model)
  YAML::Node config;  // run-config fragment for every cell (placement, compute_dtype, ...)
  std::vector<QualityVariant> variants;  // at least one; the first is the reference
  std::vector<double> budgets;
  std::vector<QualityTask> tasks;
  std::vector<QualityPolicy> policies;
  std::optional<GroupPlot> group_plot;
};

// Errors name the file and the key.
QualitySuite load_quality_suite(const std::string& path);

// The kv policy of `p` at `budget` (ignored when the policy has none).
policy::KvPolicy quality_kv(const QualityPolicy& p, double budget);

// `model_dir`, when not empty, replaces the suite's model (a suite for a model that lives outside
// the repository, such as a downloaded checkpoint, names none).
int run_quality_suite(const std::string& suite_path, const std::string& out_dir,
                      const std::string& model_dir = "");

}  // namespace h2oflex::eval
