// Peer rows: a suite runs another system's script on a row's shapes beside h2oflex's rows, and
// `versus` divides one row's measured throughput by another's (or by the fastest of several).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/suite/experiment_runner.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

struct SuiteDir {
  fs::path dir = fs::temp_directory_path() / ("h2oflex_peer_" + std::to_string(::getpid()));
  SuiteDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~SuiteDir() { fs::remove_all(dir); }
};

// A fake peer: its throughput is batch x prompt_len / 1000, times --speed; it writes the
// arguments it was given into the result so the test can see them.
constexpr const char* kFakePeer = R"(import argparse, json
ap = argparse.ArgumentParser()
for k in ["--model", "--batch", "--prompt-len", "--gen-len", "--speed", "--json"]:
    ap.add_argument(k)
a = ap.parse_args()
if a.speed == "fail":
    raise SystemExit("no torch here")
t = int(a.batch) * int(a.prompt_len) / 1000 * float(a.speed)
doc = {"args": vars(a)}
for p in ["prefill", "decode", "total"]:
    doc[p] = {"throughput_tok_s": t, "latency_s": 1.0}
json.dump(doc, open(a.json, "w"))
)";

// Writes the fake peer and a suite of `rows` (YAML list items) on OPT-125m's shapes, 4 x (500 +
// 4), into d; returns the suite's path.
fs::path write_peer_suite(const SuiteDir& d, const std::string& rows) {
  std::ofstream(d.dir / "peer.py") << kFakePeer;
  const std::string hw = std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/local_cpu.yaml";
  std::ofstream(d.dir / "s.yaml")
      << "suite: s\ndefaults: {hardware_profile: " << hw
      << ", config: {model: opt-125m, prompt_len: 500, gen_len: 4, batch_size: 4}}\nrows:\n"
      << rows;
  return d.dir / "s.yaml";
}

TEST(SuitePeer, RunsThePeerOnTheRowsShapesAndDividesByTheVersusRow) {
  SuiteDir d;
  const fs::path suite = write_peer_suite(
      d,
      "  - {label: ours, versus: theirs, config: {}}\n"
      "  - {label: theirs, peer: {script: peer.py, args: {speed: 2}}, config: {}}\n"
      "  - {label: broken, peer: {script: peer.py, args: {speed: fail}}, config: {}}\n");
  int h2oflex_runs = 0;
  const MeasureFn ours = [&](const YAML::Node& config) {
    ++h2oflex_runs;
    EXPECT_EQ(config["batch_size"].as<int>(), 4);
    MeasuredRow m;
    m.total_tok_s = 10;
    return m;
  };
  const Suite s = load_suite(suite.string());
  ASSERT_TRUE(s.rows[1].peer.has_value());
  EXPECT_EQ(s.rows[1].peer->script, (d.dir / "peer.py").lexically_normal().string());
  EXPECT_FALSE(s.rows[1].predict);
  setenv("H2OFLEX_PEER_PYTHON", "python3", 1);
  const std::vector<ResultRow> rows = evaluate_suite(s, false, ours);
  EXPECT_EQ(h2oflex_runs, 1);  // the peer rows did not call the engine
  ASSERT_TRUE(rows[1].measured) << rows[1].note;
  EXPECT_DOUBLE_EQ(*rows[1].measured, 4 * 500 / 1000.0 * 2);  // its shapes and its args
  const nlohmann::json& args = rows[1].measurement->details["args"];
  EXPECT_EQ(args["model"], "opt-125m");
  EXPECT_EQ(args["gen_len"], "4");
  ASSERT_TRUE(rows[0].versus_ratio);
  EXPECT_DOUBLE_EQ(*rows[0].versus_ratio, 10 / 4.0);
  const std::string md = results_markdown(s, rows, false);
  EXPECT_NE(md.find("| 2.5 x theirs |"), std::string::npos) << md;
  // A peer that fails is a skipped row with its message, not a failed suite.
  EXPECT_FALSE(rows[2].measured);
  EXPECT_NE(rows[2].note.find("peer failed"), std::string::npos) << rows[2].note;
  EXPECT_NE(rows[2].note.find("no torch here"), std::string::npos) << rows[2].note;
}

// `versus` with several rows divides by the fastest of them and names it; a row that measured
// nothing (a failed peer) is passed over.
TEST(SuitePeer, VersusSeveralRowsDividesByTheFastest) {
  SuiteDir d;
  const fs::path suite = write_peer_suite(
      d,
      "  - {label: ours, versus: [slow, fast, broken], config: {}}\n"
      "  - {label: slow, peer: {script: peer.py, args: {speed: 1}}, config: {}}\n"
      "  - {label: fast, peer: {script: peer.py, args: {speed: 2.5}}, config: {}}\n"
      "  - {label: broken, peer: {script: peer.py, args: {speed: fail}}, config: {}}\n");
  const MeasureFn ours = [&](const YAML::Node&) {
    MeasuredRow m;
    m.total_tok_s = 10;
    return m;
  };
  const Suite s = load_suite(suite.string());
  EXPECT_EQ(s.rows[0].versus, (std::vector<std::string>{"slow", "fast", "broken"}));
  setenv("H2OFLEX_PEER_PYTHON", "python3", 1);
  const std::vector<ResultRow> rows = evaluate_suite(s, false, ours);
  ASSERT_TRUE(rows[0].versus_ratio);
  EXPECT_DOUBLE_EQ(*rows[0].versus_ratio, 10 / 5.0);  // fast: 4 x 500 / 1000 x 2.5
  EXPECT_EQ(rows[0].versus_label, "fast");
  const std::string md = results_markdown(s, rows, false);
  EXPECT_NE(md.find("| 2 x fast |"), std::string::npos) << md;
}

TEST(SuitePeer, VersusMustNameAnotherRow) {
  SuiteDir d;
  std::ofstream(d.dir / "s.yaml") << "suite: s\nrows:\n"
                                     "  - {label: a, versus: nobody, predict: false, config: "
                                     "{model: opt-125m, prompt_len: 8, gen_len: 2}}\n";
  try {
    load_suite((d.dir / "s.yaml").string());
    FAIL() << "accepted an unknown versus label";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("versus: no other row is labelled 'nobody'"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(d.dir / "s.yaml") << "suite: s\nrows:\n"
                                     "  - {label: a, versus: [b, nobody], predict: false, config: "
                                     "{model: opt-125m, prompt_len: 8, gen_len: 2}}\n"
                                     "  - {label: b, predict: false, config: "
                                     "{model: opt-125m, prompt_len: 8, gen_len: 2}}\n";
  try {
    load_suite((d.dir / "s.yaml").string());
    FAIL() << "accepted an unknown label in a versus list";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("versus: no other row is labelled 'nobody'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace h2oflex
