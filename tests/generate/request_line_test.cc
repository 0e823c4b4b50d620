// Input lines in both accepted formats, and every way a line can be rejected.
#include <gtest/gtest.h>

#include "experiments/generate/request_line.h"

namespace h2oflex::generate {
namespace {

TEST(RequestLine, PlainFormatWithAllFields) {
  const ParsedLine p = parse_request_line(
      R"({"id": "a1", "prompt": "Hello", "max_new_tokens": 12, "temperature": 0.7,)"
      R"( "top_p": 0.9, "stop": ["\n", "END"], "seed": 5})",
      4);
  ASSERT_TRUE(p.request) << p.error->reason;
  EXPECT_FALSE(p.error);
  EXPECT_EQ(p.request->id, "a1");
  EXPECT_EQ(p.request->prompt, "Hello");
  EXPECT_EQ(p.request->max_new_tokens, 12);
  EXPECT_FLOAT_EQ(*p.request->temperature, 0.7f);
  EXPECT_FLOAT_EQ(*p.request->top_p, 0.9f);
  EXPECT_EQ(p.request->stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(p.request->seed, 5u);
  EXPECT_EQ(p.request->line, 4);
}

TEST(RequestLine, PlainFormatMinimalLeavesDefaultsOpen) {
  const ParsedLine p = parse_request_line(R"({"id": 17, "prompt": "", "stop": null})", 1);
  ASSERT_TRUE(p.request);
  EXPECT_EQ(p.request->id, "17");
  EXPECT_EQ(p.request->prompt, "");
  EXPECT_FALSE(p.request->max_new_tokens);
  EXPECT_FALSE(p.request->temperature);
  EXPECT_FALSE(p.request->top_p);
  EXPECT_TRUE(p.request->stop.empty());
}

TEST(RequestLine, OpenAiBatchFormat) {
  const ParsedLine p = parse_request_line(
      R"({"custom_id": "req-9", "method": "POST", "url": "/v1/completions",)"
      R"( "body": {"model": "x", "prompt": "Once", "max_tokens": 5, "temperature": 0,)"
      R"( "top_p": 0.5, "stop": "."}})",
      2);
  ASSERT_TRUE(p.request) << p.error->reason;
  EXPECT_EQ(p.request->id, "req-9");
  EXPECT_EQ(p.request->prompt, "Once");
  EXPECT_EQ(p.request->max_new_tokens, 5);
  EXPECT_FLOAT_EQ(*p.request->temperature, 0.0f);
  EXPECT_FLOAT_EQ(*p.request->top_p, 0.5f);
  EXPECT_EQ(p.request->stop, std::vector<std::string>{"."});
}

// The plain format's field for the limit is max_new_tokens; max_tokens belongs to the body.
TEST(RequestLine, BatchFormatWithoutOptionalEnvelopeFields) {
  const ParsedLine p =
      parse_request_line(R"({"custom_id": "x", "body": {"prompt": "p", "n": 1}})", 1);
  ASSERT_TRUE(p.request);
  EXPECT_FALSE(p.request->max_new_tokens);
}

struct BadLine {
  const char* text;
  const char* reason_part;  // the reason must mention this
  const char* id;           // the id the error should carry ("" = none readable)
};

class RequestLineErrors : public ::testing::TestWithParam<BadLine> {};

TEST_P(RequestLineErrors, ReportsReasonAndLine) {
  const BadLine& c = GetParam();
  const ParsedLine p = parse_request_line(c.text, 33);
  ASSERT_FALSE(p.request) << c.text;
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.error->line, 33);
  EXPECT_NE(p.error->reason.find(c.reason_part), std::string::npos)
      << "reason '" << p.error->reason << "' lacks '" << c.reason_part << "'";
  EXPECT_EQ(p.error->id, c.id);
}

INSTANTIATE_TEST_SUITE_P(
    All, RequestLineErrors,
    ::testing::Values(
        BadLine{R"({"id": "a", "prompt": "x")", "invalid JSON", ""},
        BadLine{"not json at all", "invalid JSON", ""},
        BadLine{R"(["id", "prompt"])", "expected a JSON object", ""},
        BadLine{R"({"prompt": "x"})", "missing 'id'", ""},
        BadLine{R"({"id": "a"})", "missing 'prompt'", "a"},
        BadLine{R"({"id": "a", "prompt": null})", "missing 'prompt'", "a"},
        BadLine{R"({"id": "", "prompt": "x"})", "'id' is empty", ""},
        BadLine{R"({"id": 1.5, "prompt": "x"})", "'id' must be a string or an integer", ""},
        BadLine{R"({"id": "a", "prompt": ["x", "y"]})", "'prompt' must be a string", "a"},
        BadLine{R"({"id": "a", "prompt": "x", "max_new_tokens": 0})", "'max_new_tokens' must be",
                "a"},
        BadLine{R"({"id": "a", "prompt": "x", "max_new_tokens": "5"})", "must be an integer", "a"},
        BadLine{R"({"id": "a", "prompt": "x", "temperature": -1})", "'temperature' must be >= 0",
                "a"},
        BadLine{R"({"id": "a", "prompt": "x", "top_p": 0})", "'top_p' must be in (0, 1]", "a"},
        BadLine{R"({"id": "a", "prompt": "x", "top_p": 1.5})", "'top_p' must be in (0, 1]", "a"},
        BadLine{R"({"id": "a", "prompt": "x", "stop": [1]})", "'stop' must be a string", "a"},
        BadLine{R"({"id": "a", "prompt": "x", "stop": ""})", "empty string", "a"},
        BadLine{R"({"body": {"prompt": "x"}})", "missing 'custom_id'", ""},
        BadLine{R"({"custom_id": "c"})", "missing 'body'", "c"},
        BadLine{R"({"custom_id": "c", "body": {}})", "missing 'body.prompt'", "c"},
        BadLine{R"({"custom_id": "c", "url": "/v1/chat/completions", "body": {"messages": []}})",
                "only \"/v1/completions\"", "c"},
        BadLine{R"({"custom_id": "c", "body": {"prompt": "x", "n": 3}})", "'body.n'", "c"},
        BadLine{R"({"custom_id": "c", "body": {"prompt": "x", "max_tokens": -2}})",
                "'body.max_tokens' must be >= 1", "c"},
        BadLine{R"({"custom_id": "c", "method": "GET", "body": {"prompt": "x"}})", "'method'", "c"},
        BadLine{R"({"id": "a", "prompt": "x", "extra": true})", "field 'extra' is not supported",
                "a"},
        BadLine{R"({"id": "a", "prompt": "x", "seed": -1})", "'seed' must be an integer >= 0",
                "a"}));

}  // namespace
}  // namespace h2oflex::generate
