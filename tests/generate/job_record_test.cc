// OUT.job.json (job_record.h) on the demo model: a resumed job with `compute_dtype: auto`
// computes in the type the job started with, a resume with other settings is refused before it
// writes anything, a file that is not a record is never overwritten, and a new job over a stale
// record records its own settings.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "experiments/generate/generate_command.h"
#include "runtime/core/error.h"
#include "runtime/ops/compute_choice.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::testing {
namespace {

using nlohmann::json;

class JobRecordTest : public GenerateScratchTest {
 protected:
  void SetUp() override {
    GenerateScratchTest::SetUp();
    std::string text;
    for (int i = 0; i < 7; ++i) {
      std::string prompt = "the river";
      for (int w = 0; w < (i * 3) % 11; ++w) prompt += " ran";
      text += json{{"id", std::string("r").append(std::to_string(i))}, {"prompt", prompt}}.dump() +
              "\n";
    }
    write_text(dir() / "in.jsonl", text);
  }
  GenerateJobOptions options(const std::string& output, const std::string& compute_dtype,
                             int gen_len = 6) const {
    GenerateJobOptions o;
    o.model_dir = demo_model_dir().string();
    o.input = (dir() / "in.jsonl").string();
    o.output = (dir() / output).string();
    o.overrides = {"gen_len=" + std::to_string(gen_len), "batch_size=2",
                   "compute_dtype=" + compute_dtype, "stop_at_eos=false"};
    return o;
  }
  std::map<std::string, json> results(const std::string& output) const {
    std::map<std::string, json> by_id;
    for (const json& j : read_jsonl(dir() / output)) by_id[j.at("id")] = j;
    return by_id;
  }
  // What a kill part-way through a block leaves: the first `lines` lines.
  void keep_first_lines(const std::string& output, int lines) const {
    std::istringstream in(read_text(dir() / output));
    std::string line, kept;
    for (int i = 0; i < lines && std::getline(in, line); ++i) kept += line + "\n";
    write_text(dir() / output, kept);
  }
  json record(const std::string& name) const { return json::parse(read_text(dir() / name)); }
};

TEST_F(JobRecordTest, ResumeWithAutoKeepsTheComputeTypeTheJobStartedWith) {
  // A type `auto` does not choose in this process: a resume that measured again would be refused
  // as a change of compute_dtype (the texts of two types may well agree on this model).
  const ops::ComputeType fastest = ops::fastest_cpu_compute_type();
  const std::string started = fastest == ops::ComputeType::F32 ? "bf16" : "f32";
  const std::string chosen = std::string(ops::compute_type_name(fastest));
  ASSERT_EQ(run_generate(options("started.jsonl", started)), 0);
  EXPECT_EQ(record("started.job.json")["compute_dtype"], started);

  ASSERT_EQ(run_generate(options("out.jsonl", started)), 0);
  keep_first_lines("out.jsonl", 3);  // inside the second block of two
  ASSERT_EQ(run_generate(options("out.jsonl", "auto")), 0);
  EXPECT_EQ(results("out.jsonl"), results("started.jsonl"));
  EXPECT_EQ(read_jsonl(dir() / "out.jsonl").size(), 7u);
  EXPECT_EQ(record("out.job.json")["compute_dtype"], started);

  // A new job (nothing in its output) measures again and records what it chose.
  fs::remove(dir() / "out.jsonl");
  ASSERT_EQ(run_generate(options("out.jsonl", "auto")), 0);
  EXPECT_EQ(record("out.job.json")["compute_dtype"], chosen);
}

TEST_F(JobRecordTest, ResumeWithOtherSettingsIsRefusedNamingTheSetting) {
  ASSERT_EQ(run_generate(options("out.jsonl", "f32")), 0);
  keep_first_lines("out.jsonl", 3);
  const std::string kept = read_text(dir() / "out.jsonl");
  const std::string recorded = read_text(dir() / "out.job.json");
  auto expect_refused = [&](const GenerateJobOptions& o, const std::string& needle) {
    try {
      run_generate(o);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_NE(what.find("out.job.json"), std::string::npos) << what;
    }
    EXPECT_EQ(read_text(dir() / "out.jsonl"), kept) << needle;
    EXPECT_EQ(read_text(dir() / "out.job.json"), recorded) << needle;
  };
  expect_refused(options("out.jsonl", "f32", 7), "started with gen_len 6");
  expect_refused(options("out.jsonl", "bf16"), "started with compute_dtype \"f32\"");
  GenerateJobOptions sampled = options("out.jsonl", "f32");
  sampled.overrides.push_back("temperature=0.5");
  expect_refused(sampled, "temperature");
  GenerateJobOptions ungrouped = options("out.jsonl", "f32");
  ungrouped.no_grouping = true;
  expect_refused(ungrouped, "grouping");

  // The same settings resume it.
  ASSERT_EQ(run_generate(options("out.jsonl", "f32")), 0);
  EXPECT_EQ(read_jsonl(dir() / "out.jsonl").size(), 7u);
}

TEST_F(JobRecordTest, AFileThatIsNotARecordIsNeverOverwritten) {
  write_text(dir() / "out.job.json", "{\"notes\": \"mine\"}\n");
  EXPECT_THROW(run_generate(options("out.jsonl", "f32")), InputError);
  EXPECT_EQ(read_text(dir() / "out.job.json"), "{\"notes\": \"mine\"}\n");
  EXPECT_FALSE(fs::exists(dir() / "out.jsonl"));
}

TEST_F(JobRecordTest, ANewJobOverAStaleRecordRecordsItsOwnSettings) {
  ASSERT_EQ(run_generate(options("out.jsonl", "f32", 6)), 0);
  fs::remove(dir() / "out.jsonl");  // the results are gone; the record describes nothing
  ASSERT_EQ(run_generate(options("out.jsonl", "f32", 7)), 0);
  EXPECT_EQ(record("out.job.json")["gen_len"], 7);
  EXPECT_EQ(read_jsonl(dir() / "out.jsonl").size(), 7u);
}

}  // namespace
}  // namespace h2oflex::testing
