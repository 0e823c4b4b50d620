// `experiment --predict` over the published-table suites, the output files, suite errors, and
// the plan command.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "experiments/plan/plan_command.h"
#include "experiments/suite/experiment_runner.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

std::string suite(const char* name) {
  return std::string(H2OFLEX_SOURCE_DIR) + "/experiments/suites/" + name;
}

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("h2oflex_exp_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

nlohmann::json predict(const char* suite_name, const fs::path& out) {
  ExperimentOptions o;
  o.suite_path = suite(suite_name);
  o.out_dir = out.string();
  o.predict = true;
  EXPECT_EQ(run_experiment(o, nullptr), 0);
  std::ifstream in(out / "results.json");
  return nlohmann::json::parse(in);
}

// Splits one CSV line, honoring double quotes.
std::vector<std::string> csv_split(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else {
        quoted = !quoted;
      }
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

const nlohmann::json& row_labeled(const nlohmann::json& doc, const std::string& label) {
  for (const auto& r : doc["rows"]) {
    if (r["label"] == label) return r;
  }
  ADD_FAILURE() << "no row " << label;
  static const nlohmann::json none;
  return none;
}

void expect_band(const nlohmann::json& doc, const std::string& label, double published,
                 double band) {
  const nlohmann::json& r = row_labeled(doc, label);
  ASSERT_TRUE(r["predicted_tok_s"].is_number()) << label;
  EXPECT_DOUBLE_EQ(r["published_tok_s"].get<double>(), published) << label;
  const double ratio = r["predicted_tok_s"].get<double>() / published;
  EXPECT_NEAR(ratio, 1.0, band) << label << ": predicted " << r["predicted_tok_s"];
  EXPECT_EQ(r["within_band"], true) << label;
}

TEST(ExperimentPredict, FlexGenTableWithin25Percent) {
  const fs::path out = temp_dir("flexgen");
  const nlohmann::json doc = predict("flexgen_t4.yaml", out);
  expect_band(doc, "FlexGen OPT-6.7B", 25.26, 0.25);
  expect_band(doc, "FlexGen OPT-30B", 7.32, 0.25);
  expect_band(doc, "FlexGen OPT-175B", 0.69, 0.25);
  // FlexGen with 4-bit compression (its published policies; the profile's dequantization rate
  // is what the OPT-6.7B row implies, so the other two are predictions).
  expect_band(doc, "FlexGen+4bit OPT-6.7B", 29.12, 0.30);
  expect_band(doc, "FlexGen+4bit OPT-30B", 8.38, 0.30);
  expect_band(doc, "FlexGen+4bit OPT-175B", 1.12, 0.30);
  // The policy column tags compression (cw, cc).
  EXPECT_EQ(row_labeled(doc, "FlexGen+4bit OPT-6.7B")["policy"],
            "100 0 100 0 100 0 cw cc no-overlap");
  EXPECT_EQ(row_labeled(doc, "FlexGen+4bit OPT-30B")["policy"], "0 100 0 100 0 100 cc");
  EXPECT_EQ(row_labeled(doc, "FlexGen OPT-30B")["policy"], "20 80 0 100 0 100 ccc");
  // Systems h2oflex does not model carry their published number only.
  const nlohmann::json& ds = row_labeled(doc, "DeepSpeed OPT-30B");
  EXPECT_DOUBLE_EQ(ds["published_tok_s"].get<double>(), 0.60);
  EXPECT_TRUE(ds["predicted_tok_s"].is_null());
  EXPECT_TRUE(ds["ratio"].is_null());
  EXPECT_TRUE(fs::exists(out / "table.md"));
  fs::remove_all(out);
}

TEST(ExperimentPredict, H2OOpt30BRowsWithin30Percent) {
  const fs::path out = temp_dir("h2o");
  const nlohmann::json doc = predict("h2o_t4.yaml", out);
  expect_band(doc, "H2O-20% OPT-30B 512+32", 12.7, 0.30);
  expect_band(doc, "H2O-20% OPT-30B 512+512", 18.83, 0.30);
  expect_band(doc, "H2O-20% OPT-30B 512+1024", 13.82, 0.30);
  // H2O with FlexGen's 4-bit weight compression.
  expect_band(doc, "H2O-20% 4-bit OPT-6.7B 512+32", 50.5, 0.30);
  expect_band(doc, "H2O-20% 4-bit OPT-6.7B 512+512", 72.5, 0.30);
  expect_band(doc, "H2O-20% 4-bit OPT-6.7B 512+1024", 62.3, 0.30);
  // Every row that states a band meets it.
  for (const auto& r : doc["rows"]) {
    if (r["band"].is_number() && r["predicted_tok_s"].is_number()) {
      EXPECT_EQ(r["within_band"], true) << r["label"];
    }
  }
  fs::remove_all(out);
}

TEST(ExperimentPredict, CsvHasExactlyTheColumns) {
  const fs::path out = temp_dir("csv");
  const nlohmann::json doc = predict("flexgen_t4.yaml", out);
  std::ifstream in(out / "table.csv");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const std::vector<std::string> want = {
      "system", "model",           "prompt_len",      "gen_len",        "batch",
      "policy", "published_tok_s", "predicted_tok_s", "measured_tok_s", "ratio"};
  EXPECT_EQ(csv_split(line), want);
  size_t rows = 0;
  while (std::getline(in, line)) {
    const auto f = csv_split(line);
    ASSERT_EQ(f.size(), want.size()) << line;
    EXPECT_TRUE(f[8].empty()) << "measured in --predict: " << line;
    if (f[0] == "hf_accelerate") {
      EXPECT_TRUE(f[7].empty()) << line;  // not modeled: no prediction
      EXPECT_FALSE(f[6].empty()) << line;
    }
    ++rows;
  }
  EXPECT_EQ(rows, doc["rows"].size());
  fs::remove_all(out);
}

std::string suite_error(const std::string& text) {
  const fs::path dir = temp_dir("bad");
  fs::create_directories(dir);
  const fs::path p = dir / "bad.yaml";
  std::ofstream(p) << text;
  try {
    load_suite(p.string());
  } catch (const InputError& e) {
    fs::remove_all(dir);
    return e.what();
  }
  fs::remove_all(dir);
  return "<no InputError>";
}

TEST(ExperimentSuite, BadSuitesNameTheRowAndKey) {
  const std::string head =
      "suite: bad\nrows:\n  - {label: ok, predict: false, config: {model: opt-125m, prompt_len: 8, "
      "gen_len: 2}}\n";
  std::string e = suite_error(
      head +
      "  - label: second\n    predict: false\n    config: {model: opt-125m, prompt_len: 8, "
      "gen_len: 2, policy: {weights: {gpu: 120}}}\n");
  EXPECT_NE(e.find("rows[1] (second).config.policy.weights.gpu: 120 is not a percentage"),
            std::string::npos)
      << e;
  e = suite_error(head + "  - {label: third, publishd_tok_s: 3, config: {model: opt-125m}}\n");
  EXPECT_NE(e.find("rows[1].publishd_tok_s: unknown key"), std::string::npos) << e;
  e = suite_error(head + "  - {predict: false, config: {prompt_len: 8, gen_len: 2}}\n");
  EXPECT_NE(e.find("rows[1].config.model: missing"), std::string::npos) << e;
  e = suite_error(head +
                  "  - {predict: false, config: {model: opt-125m, prompt_len: 8, gen_len: 2, "
                  "kv: {policy: h2o, heavy_ratio: 2, recent_ratio: 0.1}}}\n");
  EXPECT_NE(e.find("rows[1].config.kv.heavy_ratio: 2 is not a fraction"), std::string::npos) << e;
  e = suite_error(head + "  - {config: {model: opt-125m, prompt_len: 8, gen_len: 2}}\n");
  EXPECT_NE(e.find("rows[1].hardware_profile: missing"), std::string::npos) << e;
  e = suite_error("suite: bad\nrows: []\n");
  EXPECT_NE(e.find("rows: expected a non-empty list"), std::string::npos) << e;
}

TEST(ExperimentRun, MeasuredRowsAndSkips) {
  const fs::path dir = temp_dir("measure");
  fs::create_directories(dir);
  const std::string hw = std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/";
  std::ofstream(dir / "s.yaml") << "suite: s\nrows:\n"
                                   "  - {label: cpu, hardware_profile: "
                                << hw
                                << "local_cpu.yaml, band: 0.5, config: {model: opt-125m, "
                                   "prompt_len: 16, gen_len: 4, policy: auto}}\n"
                                   "  - {label: gpu, hardware_profile: "
                                << hw
                                << "t4.yaml, published_tok_s: 5, config: {model: opt-125m, "
                                   "prompt_len: 16, gen_len: 4}}\n";
  int calls = 0;
  double predicted_cpu = 0;
  const MeasureFn fake = [&](const YAML::Node& config) {
    ++calls;
    // policy: auto arrives resolved to a concrete policy.
    EXPECT_TRUE(config["policy"].IsMap());
    EXPECT_EQ(config["model"].as<std::string>(), "opt-125m");
    MeasuredRow m;
    m.total_tok_s = 10;
    return m;
  };
  const Suite s = load_suite((dir / "s.yaml").string());
  const std::vector<ResultRow> rows = evaluate_suite(s, false, fake);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(rows[0].measured && rows[0].predicted);
  predicted_cpu = *rows[0].predicted;
  EXPECT_DOUBLE_EQ(*rows[0].ratio(), 10 / predicted_cpu);  // no published: vs the prediction
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(rows[1].measured);
  EXPECT_NE(rows[1].note.find("computes on a GPU"), std::string::npos) << rows[1].note;
  EXPECT_DOUBLE_EQ(*rows[1].ratio(), *rows[1].predicted / 5);
  fs::remove_all(dir);
}

TEST(Plan, Opt175BPlansQuicklyAndPrints) {
  PlanOptions o;
  o.model = "opt-175b";
  o.hardware_path = std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/t4.yaml";
  o.kv = "h2o:0.1,0.1";
  const fs::path out = temp_dir("plan");
  fs::create_directories(out);
  o.json_out = (out / "plan.json").string();
  testing::internal::CaptureStdout();
  EXPECT_EQ(run_plan(o), 0);
  const std::string text = testing::internal::GetCapturedStdout();
  EXPECT_NE(text.find("gpu_batch_size"), std::string::npos) << text;
  EXPECT_NE(text.find("predicted: prefill"), std::string::npos) << text;
  EXPECT_NE(text.find("peak memory: device"), std::string::npos) << text;
  std::ifstream in(o.json_out);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_GE(j["search_seconds"].get<double>(), 0.0);  // reported; speed is a benchmark's
  EXPECT_EQ(j["kv_heads"].get<int>(), 96);
  EXPECT_GT(j["predicted"]["total_tok_s"].get<double>(), 0);
  fs::remove_all(out);
  // plan_policy: the run path's `policy: auto`.
  const policy::HardwareProfile hw = policy::load_hardware_profile(o.hardware_path);
  const policy::Policy p = plan_policy(model_shape_for("opt-30b"), hw, 512, 32, {});
  EXPECT_GE(p.block_size(), 1);
  EXPECT_THROW(model_shape_for("gpt-2"), InputError);
}

}  // namespace
}  // namespace h2oflex
