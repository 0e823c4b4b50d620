// A converted weight layout truncated between two runs: the next `run` on it fails with a clear
// I/O error naming the file (exit code 1), writes no result and leaves no file behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace {

namespace fs = std::filesystem;

using h2oflex::testing_support::Outcome;

Outcome run(const std::string& args) {
  return h2oflex::testing_support::run_h2oflex(args);
}

class LayoutBetweenRuns : public h2oflex::testing_support::ScratchDirTest {};

TEST_F(LayoutBetweenRuns, TruncatedConvertedLayoutIsAClearIoError) {
  const fs::path model = dir() / "converted";
  const fs::path fixture = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt/tiny-postln";
  ASSERT_EQ(run("convert --from " + fixture.string() + " --to " + model.string() + " --dtype f32")
                .exit_code,
            0);
  const fs::path data = model / "weights.bin";
  fs::resize_file(data, fs::file_size(data) / 2);
  const fs::path cfg = dir() / "c.yaml";
  std::ofstream(cfg) << "model: " << model.string()
                     << "\ndummy: false\nprompt_len: 4\ngen_len: 2\n";
  const fs::path json = dir() / "r.json";
  const std::set<fs::path> before{fs::directory_iterator(dir()), fs::directory_iterator()};
  const Outcome o = run("run " + cfg.string() + " --json " + json.string());
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("I/O error: "), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("I/O error: I/O error"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find(data.string()), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("truncated"), std::string::npos) << o.output;
  const std::set<fs::path> after{fs::directory_iterator(dir()), fs::directory_iterator()};
  EXPECT_EQ(after, before) << "a file was left behind";
}

}  // namespace
