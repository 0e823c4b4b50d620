// `h2oflex plan --stages S`: the pipeline plan on stdout and in --json (one entry per stage whose
// layers cover the model's, the pipeline's throughput beside one machine's), and stage options
// that do not add up refused with exit code 2 before anything is written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using h2oflex::testing_support::Outcome;
using h2oflex::testing_support::run_h2oflex;

class PlanStages : public h2oflex::testing_support::ScratchDirTest {
 protected:
  static std::string t4() {
    return std::string(H2OFLEX_SOURCE_DIR) + "/experiments/hardware/t4.yaml";
  }
  static std::string base() {
    return "plan --model opt-1.3b --prompt-len 128 --gen-len 8 --hardware " + t4();
  }
};

TEST_F(PlanStages, JsonListsEveryStageAndOneMachineBesideThePipeline) {
  const fs::path json = dir() / "plan.json";
  const Outcome o = run_h2oflex(base() + " --stages 3 --json " + json.string());
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("3 pipeline stages"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("bubble"), std::string::npos) << o.output;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j.at("stages").size(), 3u);
  int layers = 0;
  size_t next_unit = 0;
  for (const auto& s : j.at("stages")) {
    EXPECT_EQ(s.at("units").at(0).get<size_t>(), next_unit);
    next_unit = s.at("units").at(1).get<size_t>() + 1;
    layers += s.at("layers").get<int>();
    EXPECT_GT(s.at("decode_step_s").get<double>(), 0);
  }
  EXPECT_EQ(layers, 24);      // OPT-1.3B
  EXPECT_EQ(next_unit, 26u);  // embedding + 24 layers + head
  EXPECT_EQ(j.at("stages").back().at("send_bytes_decode_step").get<double>(), 0);
  EXPECT_GT(j.at("stages").front().at("send_bytes_decode_step").get<double>(), 0);
  EXPECT_EQ(j.at("predicted").at("blocks_in_flight").get<int>(), 3);
  EXPECT_GT(j.at("one_machine").at("total_tok_s").get<double>(), 0);
}

TEST_F(PlanStages, StageOptionsThatDoNotAddUpAreRefused) {
  const fs::path json = dir() / "plan.json";
  Outcome o = run_h2oflex(base() + " --stages 2 --stage-hardware " + t4() + " --stage-hardware " +
                          t4() + " --stage-hardware " + t4() + " --json " + json.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_NE(o.output.find("give one per stage"), std::string::npos) << o.output;
  o = run_h2oflex(base() + " --stages 25 --json " + json.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_NE(o.output.find("only 24 decoder layers"), std::string::npos) << o.output;
  o = run_h2oflex(base() + " --stages 0 --json " + json.string());
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_FALSE(fs::exists(json));
}

}  // namespace
