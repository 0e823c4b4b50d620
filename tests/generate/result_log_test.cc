// The output file: appends survive reopening, a torn last line is cut away, foreign content is
// refused untouched, and two jobs cannot write one file.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "experiments/generate/error_report.h"
#include "experiments/generate/result_log.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::generate {
namespace {

namespace fs = std::filesystem;

using testing::GenerateScratchTest;
using testing::read_text;
using testing::write_text;

class ResultLogTest : public GenerateScratchTest {
 protected:
  std::string out() const { return (dir() / "out.jsonl").string(); }
};

std::string line(const std::string& id) {
  return R"({"id":")" + id + R"(","text":"t )" + id +
         R"(","prompt_tokens":3,"completion_tokens":1,"finish_reason":"length"})";
}

TEST_F(ResultLogTest, AppendsAndReopens) {
  {
    ResultLog log = ResultLog::open(out());
    EXPECT_TRUE(log.done_ids().empty());
    log.append({line("a"), line("b")}, {"a", "b"});
    log.append({line("c")}, {"c"});
    EXPECT_EQ(log.lines(), 3);
  }
  EXPECT_EQ(read_text(out()), line("a") + "\n" + line("b") + "\n" + line("c") + "\n");
  ResultLog again = ResultLog::open(out());
  EXPECT_EQ(again.done_ids(), (std::unordered_set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(again.truncated_bytes(), 0);
}

TEST_F(ResultLogTest, TruncatesATornLastLine) {
  const std::string whole = line("a") + "\n" + line("b") + "\n";
  for (size_t cut : {size_t{1}, size_t{6}, size_t{20}, line("c").size() - 1}) {
    write_text(out(), whole + line("c").substr(0, cut));
    {
      ResultLog log = ResultLog::open(out());
      EXPECT_EQ(log.done_ids(), (std::unordered_set<std::string>{"a", "b"})) << cut;
      EXPECT_EQ(log.truncated_bytes(), static_cast<int64_t>(cut));
      log.append({line("c")}, {"c"});
    }
    EXPECT_EQ(read_text(out()), whole + line("c") + "\n") << cut;
  }
  // Zeros left by a crash before the data reached the disk are torn too.
  write_text(out(), whole + std::string(37, '\0'));
  EXPECT_EQ(ResultLog::open(out()).truncated_bytes(), 37);
  EXPECT_EQ(read_text(out()), whole);
}

TEST_F(ResultLogTest, RefusesAFileItDidNotWrite) {
  const std::string foreign = "{\"id\": \"a\", \"prompt\": \"input, not output\"}\n";
  write_text(out(), foreign);
  EXPECT_THROW(ResultLog::open(out()), InputError);
  EXPECT_EQ(read_text(out()), foreign);

  const std::string unterminated = line("a") + "\nsome notes without newline";
  write_text(out(), unterminated);
  EXPECT_THROW(ResultLog::open(out()), InputError);
  EXPECT_EQ(read_text(out()), unterminated);

  const std::string middle = line("a") + "\ngarbage\n" + line("b") + "\n";
  write_text(out(), middle);
  try {
    ResultLog::open(out());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text(out()), middle);
}

TEST_F(ResultLogTest, SecondWriterIsRefused) {
  ResultLog first = ResultLog::open(out());
  EXPECT_THROW(ResultLog::open(out()), InputError);
}

TEST_F(ResultLogTest, MissingDirectoryIsAnInputError) {
  EXPECT_THROW(ResultLog::open((dir() / "no/such/dir/out.jsonl").string()), InputError);
}

// Issue 49, defect 11: a full disk while the job writes its error report (here the file-size
// limit, which fails a write as a full disk does) leaves neither the report's temporary file nor
// an empty output the job created; an output that held results is kept.
class FullDiskTest : public ResultLogTest {
 protected:
  void SetUp() override {
    ResultLogTest::SetUp();
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved_), 0);
    previous_ = std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
  }
  void TearDown() override {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_);
    ResultLogTest::TearDown();
  }
  // Opens the output, then writes an error report larger than the limit, as a job starts; the
  // failure leaves through the scope that holds the log, as in the job.
  void start_job_on_a_full_disk() {
    std::vector<LineError> errors;
    for (int i = 0; i < 200; ++i) errors.push_back({i + 1, "id" + std::to_string(i), "bad line"});
    ResultLog log = ResultLog::open(out());
    rlimit small = saved_;
    small.rlim_cur = 1024;
    struct Restore {
      const rlimit& saved;
      ~Restore() { ::setrlimit(RLIMIT_FSIZE, &saved); }
    } restore{saved_};
    ::setrlimit(RLIMIT_FSIZE, &small);
    write_error_report(errors_path_for(out()), errors);
  }
  rlimit saved_{};
  void (*previous_)(int) = nullptr;
};

TEST_F(FullDiskTest, LeavesNoTemporaryReportAndNoEmptyOutput) {
  EXPECT_THROW(start_job_on_a_full_disk(), IoError);
  EXPECT_FALSE(fs::exists(errors_path_for(out()) + ".tmp")) << "the report's .tmp was left";
  EXPECT_FALSE(fs::exists(errors_path_for(out())));
  EXPECT_FALSE(fs::exists(out())) << "an empty output was left";
}

TEST_F(FullDiskTest, KeepsAnOutputThatHeldResults) {
  {
    ResultLog log = ResultLog::open(out());
    log.append({line("a")}, {"a"});
  }
  EXPECT_THROW(start_job_on_a_full_disk(), IoError);
  EXPECT_EQ(read_text(out()), line("a") + "\n");
}

}  // namespace
}  // namespace h2oflex::generate
