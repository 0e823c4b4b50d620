// Reading a whole input file: good lines kept in order, bad ones reported with their line.
#include <gtest/gtest.h>

#include "experiments/generate/job_input.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::generate {
namespace {

using testing::GenerateScratchTest;

class JobInputTest : public GenerateScratchTest {};

TEST_F(JobInputTest, KeepsGoodLinesAndReportsBadOnes) {
  const auto file = dir() / "in.jsonl";
  testing::write_text(file,
                      "\xEF\xBB\xBF{\"id\": \"a\", \"prompt\": \"one\"}\r\n"     // 1 (BOM, CRLF)
                      "\n"                                                       // 2 blank
                      "{\"id\": \"b\", \"prompt\": \n"                           // 3 invalid
                      "{\"custom_id\": \"c\", \"body\": {\"prompt\": \"3\"}}\n"  // 4
                      "   \n"                                                    // 5 blank
                      "{\"id\": \"a\", \"prompt\": \"again\"}\n"                 // 6 duplicate
                      "{\"id\": \"d\"}\n"                                        // 7 no prompt
                      "{\"id\": \"e\", \"prompt\": \"last\"}");                  // 8 no newline
  const JobInput in = read_job_input(file.string());
  EXPECT_EQ(in.lines, 8);
  ASSERT_EQ(in.requests.size(), 3u);
  EXPECT_EQ(in.requests[0].id, "a");
  EXPECT_EQ(in.requests[0].prompt, "one");
  EXPECT_EQ(in.requests[0].line, 1);
  EXPECT_EQ(in.requests[1].id, "c");
  EXPECT_EQ(in.requests[1].line, 4);
  EXPECT_EQ(in.requests[2].id, "e");
  EXPECT_EQ(in.requests[2].line, 8);
  ASSERT_EQ(in.errors.size(), 3u);
  EXPECT_EQ(in.errors[0].line, 3);
  EXPECT_NE(in.errors[0].reason.find("invalid JSON"), std::string::npos);
  EXPECT_EQ(in.errors[1].line, 6);
  EXPECT_EQ(in.errors[1].id, "a");
  EXPECT_NE(in.errors[1].reason.find("duplicate id (first seen on line 1)"), std::string::npos)
      << in.errors[1].reason;
  EXPECT_EQ(in.errors[2].line, 7);
  EXPECT_NE(in.errors[2].reason.find("missing 'prompt'"), std::string::npos);
}

// A number beyond double range, even in a key nobody reads, is that line's error (issue 14, 4).
TEST_F(JobInputTest, NumberOutOfDoubleRangeIsALineErrorNotAnAbort) {
  const auto file = dir() / "in.jsonl";
  testing::write_text(file,
                      "{\"id\": \"a\", \"prompt\": \"one\"}\n"
                      "{\"id\": \"b\", \"prompt\": \"two\", \"unused\": 1e400}\n"
                      "{\"id\": \"c\", \"prompt\": \"three\"}\n");
  JobInput in;
  ASSERT_NO_THROW(in = read_job_input(file.string()));
  ASSERT_EQ(in.requests.size(), 2u);
  ASSERT_EQ(in.errors.size(), 1u);
  EXPECT_EQ(in.errors[0].line, 2);
  EXPECT_NE(in.errors[0].reason.find("invalid JSON"), std::string::npos) << in.errors[0].reason;
}

// 42 and "42" are one id; the duplicate's message says why (issue 14, 17).
TEST_F(JobInputTest, IntegerAndStringIdCollisionIsExplained) {
  const auto file = dir() / "in.jsonl";
  testing::write_text(file,
                      "{\"id\": 42, \"prompt\": \"one\"}\n"
                      "{\"id\": \"42\", \"prompt\": \"two\"}\n");
  const JobInput in = read_job_input(file.string());
  ASSERT_EQ(in.errors.size(), 1u);
  EXPECT_NE(in.errors[0].reason.find("the integer 42 and the string \"42\" are the same id"),
            std::string::npos)
      << in.errors[0].reason;
}

TEST_F(JobInputTest, MissingFileIsAnInputError) {
  EXPECT_THROW(read_job_input((dir() / "absent.jsonl").string()), InputError);
  EXPECT_THROW(read_job_input(dir().string()), InputError);
}

}  // namespace
}  // namespace h2oflex::generate
