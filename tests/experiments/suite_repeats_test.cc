// Suite `repeats`: rows are measured round by round (interleaved), the median run is reported
// with every run's throughput; a bad count is an error naming the key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiments/suite/experiment_runner.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

TEST(SuiteRepeats, InterleavesRowsAndReportsTheMedian) {
  const fs::path dir =
      fs::temp_directory_path() / ("h2oflex_repeats_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string hw = std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/local_cpu.yaml";
  std::ofstream(dir / "s.yaml") << "suite: s\nrepeats: 3\ndefaults: {hardware_profile: " << hw
                                << "}\nrows:\n"
                                   "  - {label: a, config: {model: opt-125m, prompt_len: 8, "
                                   "gen_len: 2, policy: {gpu_batch_size: 2}}}\n"
                                   "  - {label: b, config: {model: opt-125m, prompt_len: 8, "
                                   "gen_len: 2, policy: {gpu_batch_size: 4}}}\n";
  std::vector<int> order;  // gpu_batch_size of each call
  const double a_runs[] = {30, 10, 20}, b_runs[] = {5, 7, 6};
  int a_calls = 0, b_calls = 0;
  const MeasureFn fake = [&](const YAML::Node& config) {
    const int gbs = config["policy"]["gpu_batch_size"].as<int>();
    order.push_back(gbs);
    MeasuredRow m;
    m.total_tok_s = gbs == 2 ? a_runs[a_calls++] : b_runs[b_calls++];
    return m;
  };
  const Suite s = load_suite((dir / "s.yaml").string());
  EXPECT_EQ(s.repeats, 3);
  const std::vector<ResultRow> rows = evaluate_suite(s, false, fake);
  EXPECT_EQ(order, (std::vector<int>{2, 4, 2, 4, 2, 4}));
  ASSERT_TRUE(rows[0].measured && rows[1].measured);
  EXPECT_EQ(*rows[0].measured, 20);
  EXPECT_EQ(*rows[1].measured, 6);
  EXPECT_EQ(rows[0].measured_runs, (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(rows[0].measurement->total_tok_s, 20);
  const std::string md = results_markdown(s, rows, false);
  EXPECT_NE(md.find("| 20 (10-30, 3 runs) |"), std::string::npos) << md;
  const nlohmann::json j = results_json(s, rows, false);
  EXPECT_EQ(j["rows"][1]["measured_runs_tok_s"], (std::vector<double>{5, 6, 7}));

  std::ofstream(dir / "bad.yaml") << "suite: s\nrepeats: 0\nrows:\n  - {predict: false, config: "
                                     "{model: opt-125m, prompt_len: 8, gen_len: 2}}\n";
  try {
    load_suite((dir / "bad.yaml").string());
    FAIL() << "accepted repeats: 0";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("repeats: 0 is not in [1, 100]"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace h2oflex
