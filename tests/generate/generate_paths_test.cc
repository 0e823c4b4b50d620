// generate's files checked before any work (issue 14, defects 3, 11, 12, 17): no output may be
// an input or another output (links resolved), an error report that is not ours is never
// overwritten, and every refusal leaves the files as they were.
#include <gtest/gtest.h>

#include <filesystem>

#include "experiments/generate/generate_command.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::testing {
namespace {

class GeneratePathsTest : public GenerateScratchTest {
 protected:
  void SetUp() override {
    GenerateScratchTest::SetUp();
    write_text(dir() / "in.jsonl", kInput);
  }
  GenerateJobOptions options() const {
    GenerateJobOptions o;
    o.model_dir = demo_model_dir().string();
    o.input = (dir() / "in.jsonl").string();
    o.output = (dir() / "out.jsonl").string();
    o.overrides = {"gen_len=2", "compute_dtype=f32"};
    return o;
  }
  // run_generate must throw InputError mentioning `needle` and leave `kept` as it was.
  void expect_refused(const GenerateJobOptions& o, const std::string& needle,
                      const fs::path& kept) {
    const std::string before = read_text(kept);
    try {
      run_generate(o);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(read_text(kept), before) << kept << " was changed";
  }
  static constexpr const char* kInput = "{\"id\": \"a\", \"prompt\": \"hello\"}\n";
};

TEST_F(GeneratePathsTest, JsonEqualToOutputOrInputIsRefused) {
  GenerateJobOptions o = options();
  o.summary_json = o.input;
  expect_refused(o, "are the same file", dir() / "in.jsonl");
  write_text(dir() / "out.jsonl", "");
  o.summary_json = o.output;
  expect_refused(o, "are the same file", dir() / "out.jsonl");
}

TEST_F(GeneratePathsTest, OutputLinkedToInputIsRefused) {
  fs::create_symlink(dir() / "in.jsonl", dir() / "link.jsonl");
  GenerateJobOptions o = options();
  o.output = (dir() / "link.jsonl").string();
  expect_refused(o, "are the same file", dir() / "in.jsonl");
}

TEST_F(GeneratePathsTest, InputThatIsTheErrorReportOfTheOutputIsRefused) {
  write_text(dir() / "x.errors.jsonl", kInput);
  GenerateJobOptions o = options();
  o.input = (dir() / "x.errors.jsonl").string();
  o.output = (dir() / "x.jsonl").string();
  expect_refused(o, "are the same file", dir() / "x.errors.jsonl");
  EXPECT_FALSE(fs::exists(dir() / "x.jsonl"));
}

TEST_F(GeneratePathsTest, ForeignErrorReportIsNotOverwritten) {
  write_text(dir() / "out.errors.jsonl", "precious notes\n");
  expect_refused(options(), "refusing to overwrite", dir() / "out.errors.jsonl");
  EXPECT_FALSE(fs::exists(dir() / "out.jsonl"));
  // One of our own reports is replaced (here: removed, the input has no bad line).
  write_text(dir() / "out.errors.jsonl",
             "{\"line\":3,\"id\":\"q\",\"error\":\"missing 'prompt'\"}\n");
  ASSERT_EQ(run_generate(options()), 0);
  EXPECT_FALSE(fs::exists(dir() / "out.errors.jsonl"));
}

TEST_F(GeneratePathsTest, JsonIntoADirectoryOrAMissingOneIsRefusedUpFront) {
  GenerateJobOptions o = options();
  fs::create_directories(dir() / "sub");
  o.summary_json = (dir() / "sub").string();
  expect_refused(o, "is a directory", dir() / "in.jsonl");
  o.summary_json = (dir() / "missing" / "s.json").string();
  expect_refused(o, "does not exist", dir() / "in.jsonl");
  EXPECT_FALSE(fs::exists(dir() / "out.jsonl")) << "work started before the check";
}

TEST_F(GeneratePathsTest, DiskPathThatIsAFileIsRefusedNamingTheKey) {
  write_text(dir() / "afile", "");
  GenerateJobOptions o = options();
  o.overrides.push_back("hardware.disk_path=" + (dir() / "afile").string());
  expect_refused(o, "hardware.disk_path", dir() / "in.jsonl");
  EXPECT_FALSE(fs::exists(dir() / "out.jsonl"));
}

TEST_F(GeneratePathsTest, BadSetIsBlamedOnTheSetNotTheFile) {
  write_text(dir() / "run.yaml", "seed: 3\n");
  GenerateJobOptions o = options();
  o.config_path = (dir() / "run.yaml").string();
  o.overrides.push_back("top_p=many");
  expect_refused(o, "--set top_p=many (over ", dir() / "in.jsonl");
}

}  // namespace
}  // namespace h2oflex::testing
