// The quality suite on the demo model: one cell per (policy, budget, task), the full cache as the
// reference row, a budget covering the sequence equal to it for every policy, a prefill-only
// policy marked n/a on a streamed task, and bad suites refused naming the key.
#include <gtest/gtest.h>

#include <cmath>

#include "experiments/eval/choice_tasks.h"
#include "experiments/eval/quality_suite.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"
#include "tests/support/hf_fixtures.h"

namespace h2oflex::testing {
namespace {

using nlohmann::json;

class QualitySuiteTest : public GenerateScratchTest {
 protected:
  void write_suite(const std::string& policies, const std::string& extra = "") {
    write_text(dir() / "t.txt",
               "The river ran past the old mill, and the miller's daughter watched the water "
               "turn the wheel. Every morning she counted the sacks of grain.");
    write_text(
        dir() / "tasks.jsonl",
        R"({"id": "a", "context": "The miller's daughter counted the", "choices": [" sacks", " stars"], "answer": 0})"
        "\n");
    write_text(dir() / "suite.yaml", "suite: test\nmodel: " + demo_model_dir().string() +
                                         "\nbudgets: [0.2, 1.0]\n" + extra +
                                         "tasks:\n"
                                         "  - {name: text, perplexity: t.txt, window: 20}\n"
                                         "  - {name: text-prefill, perplexity: t.txt, window: 20, "
                                         "stride: 10, context: prefill}\n"
                                         "  - {name: mc, choice: tasks.jsonl, context: prefill}\n"
                                         "policies:\n" +
                                         policies);
  }
  std::string suite() const { return (dir() / "suite.yaml").string(); }
};

TEST_F(QualitySuiteTest, TableHoldsEveryCellAndFullBudgetsEqualFull) {
  write_suite(
      "  - {label: full, kv: {policy: full}}\n"
      "  - {label: h2o, kv: {policy: h2o}, heavy: 0.5, recent: 0.5}\n"
      "  - {label: local, kv: {policy: h2o}, heavy: 0, recent: 1}\n"
      "  - {label: streaming, kv: {policy: streaming, sink_tokens: 1}, recent: 1}\n"
      "  - {label: snapkv, kv: {policy: snapkv}, heavy: 0.5, recent: 0.5}\n");
  ASSERT_EQ(eval::run_quality_suite(suite(), (dir() / "out").string()), 0);
  const json doc = json::parse(read_text(dir() / "out/results.json"));
  const json& cells = doc["cells"];
  ASSERT_EQ(cells.size(), (1 + 4 * 2) * 3u);
  auto cell = [&](const std::string& policy, double budget, const std::string& task) {
    for (const json& c : cells) {
      if (c["policy"] == policy && c["task"] == task &&
          (c["budget"].is_null() || c["budget"].get<double>() == budget)) {
        return c;
      }
    }
    ADD_FAILURE() << policy << " " << budget << " " << task;
    return json();
  };
  for (const char* task : {"text", "text-prefill"}) {
    const double full = cell("full", 0, task)["perplexity"];
    for (const char* p : {"h2o", "local", "snapkv"}) {
      if (std::string(p) == "snapkv" && std::string(task) == "text") continue;
      // The mean NLL (log perplexity) equal to 1e-6 relative: blocks group sequences by their
      // budgets, so GEMMs round over other rows, and the demo model's NLL of ~25 nats turns an
      // f32 rounding of the logits into ~1e-6 of the perplexity itself.
      const double nll = std::log(cell(p, 1.0, task)["perplexity"].get<double>());
      EXPECT_NEAR(nll, std::log(full), 1e-6 * std::log(full)) << p << " " << task;
      EXPECT_GT(std::fabs(cell(p, 0.2, task)["perplexity"].get<double>() / full - 1), 1e-3)
          << p << " " << task;
    }
  }
  EXPECT_EQ(cell("full", 0, "mc")["n"], 1);
  EXPECT_TRUE(cell("snapkv", 0.2, "text").contains("skipped"));
  const std::string table = read_text(dir() / "out/table.md");
  EXPECT_NE(table.find("| snapkv | 20% | n/a |"), std::string::npos) << table;
  EXPECT_NE(table.find("(1.000×)"), std::string::npos) << table;
  const std::string csv = read_text(dir() / "out/table.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 27);
}

// Variants run every policy again on another engine (here 4-bit weights through a policy
// section); ratios stay against the first variant's full cache.
TEST_F(QualitySuiteTest, VariantsRepeatThePoliciesOnAnotherEngine) {
  write_suite("  - {label: full, kv: {policy: full}}\n",
              "variants:\n"
              "  - {label: plain, config: {}}\n"
              "  - label: 4-bit weights\n"
              "    config:\n"
              "      policy: {gpu_batch_size: 4, weights: {gpu: 100, cpu: 0}, cache: {gpu: 100, "
              "cpu: 0}, activations: {gpu: 100, cpu: 0}, compress_weight: true}\n");
  ASSERT_EQ(eval::run_quality_suite(suite(), (dir() / "out").string()), 0);
  const json doc = json::parse(read_text(dir() / "out/results.json"));
  ASSERT_EQ(doc["cells"].size(), 2 * 3u);
  const json& plain = doc["cells"][0];
  const json& packed = doc["cells"][3];
  EXPECT_EQ(plain["variant"], "plain");
  EXPECT_EQ(packed["policy"], "4-bit weights / full");
  const double a = plain["perplexity"], b = packed["perplexity"];
  EXPECT_GT(std::fabs(b / a - 1), 1e-4) << "4-bit weights changed nothing";
  EXPECT_TRUE(std::isfinite(b));
  EXPECT_EQ(doc["engines"].size(), 2u);
}

// Grouped choice tasks get a table of accuracy per group and, when asked, a plot of it; --model
// replaces the suite's model (a suite for a downloaded model names none); `tokens` scores the
// text's first tokens only; prefill-context reads a task's question after the selection.
TEST_F(QualitySuiteTest, GroupsModelOverrideTokensAndPrefillContext) {
  write_text(dir() / "t.txt",
             "The river ran past the old mill, and the miller's daughter watched the water "
             "turn the wheel. Every morning she counted the sacks of grain.");
  write_text(
      dir() / "g.jsonl",
      R"({"id": "a", "context": "The miller's daughter", "question": " counted the", "choices": [" sacks", " stars"], "answer": 0, "group": "near"})"
      "\n"
      R"({"id": "b", "context": "The old mill", "question": " turned the", "choices": [" wheel", " river"], "answer": 0, "group": "far"})"
      "\n");
  write_text(dir() / "suite.yaml",
             "suite: test\nbudgets: [0.5]\n"
             "tasks:\n"
             "  - {name: text, perplexity: t.txt, window: 20, tokens: 12}\n"
             "  - {name: late, choice: g.jsonl, context: prefill-context}\n"
             "policies:\n"
             "  - {label: full, kv: {policy: full}}\n"
             "  - {label: h2o, kv: {policy: h2o}, heavy: 0.5, recent: 0.5}\n"
             "group_plot: {tasks: [late], budget: 0.5, policies: [full, h2o]}\n");
  try {
    eval::run_quality_suite(suite(), (dir() / "out").string());
    ADD_FAILURE() << "a suite without a model ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--model"), std::string::npos) << e.what();
  }
  ASSERT_EQ(eval::run_quality_suite(suite(), (dir() / "out").string(), demo_model_dir().string()),
            0);
  const json doc = json::parse(read_text(dir() / "out/results.json"));
  EXPECT_EQ(doc["model"], demo_model_dir().string());
  EXPECT_EQ(doc["cells"][0]["tokens"], 12);
  const json& late = doc["cells"][1];
  EXPECT_EQ(late["task"], "late");
  EXPECT_EQ(late["groups"]["near"]["n"], 1);
  EXPECT_EQ(late["groups"]["far"]["n"], 1);
  EXPECT_EQ(doc["group_plot"]["chance"]["late"], 0.5);
  const std::string table = read_text(dir() / "out/table.md");
  EXPECT_NE(table.find("## late: acc by group"), std::string::npos) << table;
  EXPECT_NE(table.find("| near | far |"), std::string::npos) << table;
  EXPECT_TRUE(fs::exists(dir() / "out/groups_plot.py"));
}

// Every quality suite the project ships loads, and each of its choice files holds only good
// lines (a suite that fails after an hour of cells on a typo would cost the user that hour).
TEST(ShippedQualitySuites, LoadAndTheirTaskFilesParse) {
  const fs::path suites = fs::path(testing_support::fixture_source_dir()) / "experiments/suites";
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(suites)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("quality", 0) != 0 || entry.path().extension() != ".yaml") continue;
    const eval::QualitySuite suite = eval::load_quality_suite(entry.path().string());
    for (const eval::QualityTask& t : suite.tasks) {
      if (t.perplexity) continue;
      const eval::ParsedTasks parsed = eval::read_choice_tasks(t.input);
      EXPECT_TRUE(parsed.errors.empty())
          << name << ": " << t.input << " line " << parsed.errors.front().line << ": "
          << parsed.errors.front().reason;
      EXPECT_FALSE(parsed.tasks.empty()) << name << ": " << t.input;
    }
    ++loaded;
  }
  EXPECT_GE(loaded, 4);
}

TEST_F(QualitySuiteTest, BadSuitesAreRefusedNamingTheKey) {
  auto refused = [&](const std::string& policies, const std::string& what,
                     const std::string& extra = "") {
    write_suite(policies, extra);
    try {
      eval::run_quality_suite(suite(), (dir() / "out").string());
      ADD_FAILURE() << "accepted: " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir() / "out/results.json")) << what;
  };
  refused("  - {label: h2o, kv: {policy: h2o, heavy_ratio: 0.1}, heavy: 0.5, recent: 0.5}\n",
          "policies[0].kv.heavy_ratio");
  refused("  - {label: h2o, kv: {policy: h2o}, heavy: 0.5, recent: 0.4}\n", "policies[0]");
  refused("  - {label: x, kv: {policy: lru}, heavy: 0.5, recent: 0.5}\n", "'lru'");
  refused("  - {label: full, kv: {policy: full}, colour: red}\n", "colour");
  refused("  - {label: full, kv: {policy: full}}\n", "config: holds neither model nor kv",
          "config: {kv: {policy: h2o}}\n");
  refused(
      "  - {label: full, kv: {policy: full}}\n  - {label: full, kv: {policy: h2o}, heavy: 0.5, "
      "recent: 0.5}\n",
      "policies[1].label: 'full' is already another policy's");
  refused("  - {label: full, kv: {policy: full}}\n",
          "group_plot.tasks[0]: 'text' is not a choice task",
          "group_plot: {tasks: [text], budget: 0.2, policies: [full]}\n");
  refused("  - {label: full, kv: {policy: full}}\n",
          "group_plot.policies[0]: 'h2o' is not a policy",
          "group_plot: {tasks: [mc], budget: 0.2, policies: [h2o]}\n");
  refused("  - {label: full, kv: {policy: full}}\n", "group_plot.budget: 0.3 is not one of",
          "group_plot: {tasks: [mc], budget: 0.3, policies: [full]}\n");
}

}  // namespace
}  // namespace h2oflex::testing
