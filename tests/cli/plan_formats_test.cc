// `plan --allow-compression` on the CPU names the storage formats it chose, as the JSON policy
// a run reads them; a GGUF file under weight_format: stored keeps its own blocks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace fs = std::filesystem;

namespace {

using h2oflex::testing_support::Outcome;
using h2oflex::testing_support::run_h2oflex;

class PlanFormats : public h2oflex::testing_support::ScratchDirTest {
 protected:
  // The plan's stdout and its JSON policy.
  std::pair<Outcome, nlohmann::json> plan(const std::string& model, const std::string& extra) {
    const fs::path json = dir() / "plan.json";
    const Outcome o = run_h2oflex("plan --model " + model + " --hardware " + H2OFLEX_SOURCE_DIR +
                                  "/experiments/hardware/local_cpu.yaml --prompt-len 32 "
                                  "--gen-len 8 --allow-compression --json " +
                                  json.string() + " " + extra);
    nlohmann::json policy;
    if (o.exit_code == 0) policy = nlohmann::json::parse(std::ifstream(json))["policy"];
    return {o, policy};
  }
  static std::string formats_line(const std::string& out) {
    const size_t at = out.find("formats: ");
    return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
  }
};

TEST_F(PlanFormats, ThePlanNamesTheFormatsItChose) {
  // opt-125m's 250 MB of bf16 weights in 224 MiB of RAM (a 160 MiB arena and 64 MiB more):
  // they do not fit plain.
  const auto [o, policy] = plan("opt-125m", "--device-mem 160MiB --host-mem 64MiB");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::string line = formats_line(o.output);
  ASSERT_FALSE(line.empty()) << o.output;
  const std::string weights =
      policy["compress_weight"].get<bool>() ? "q4_g64" : policy["weight_format"].get<std::string>();
  EXPECT_EQ(line,
            "formats: weights " + weights + "  cache " + policy["cache_format"].get<std::string>())
      << o.output;
  EXPECT_NE(weights, "stored") << "the plain weights do not fit the arena: " << o.output;
}

TEST_F(PlanFormats, AGgufFileKeepsItsOwnBlocks) {
  const auto [o, policy] = plan(H2OFLEX_SMOLLM2_GGUF, "--device-mem 256MiB");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_EQ(policy["weight_format"], "stored") << o.output;
  EXPECT_EQ(policy["compress_weight"], false) << o.output;
}

}  // namespace
