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

TEST(RequestLine, ChatRequestsInBothFormatsKeepTheirMessages) {
  const ParsedLine plain = parse_request_line(
      R"({"id": "c1", "messages": [{"role": "system", "content": "Be brief."},)"
      R"( {"role": "user", "content": "Hi", "name": "ann"}], "max_new_tokens": 7})",
      2);
  ASSERT_TRUE(plain.request) << plain.error->reason;
  ASSERT_TRUE(plain.request->messages);
  EXPECT_EQ(plain.request->messages->size(), 2u);
  EXPECT_EQ((*plain.request->messages)[1]["content"], "Hi");
  // The keys stay in the order written (a template's tojson prints them so).
  EXPECT_EQ((*plain.request->messages)[1].dump(), R"({"role":"user","content":"Hi","name":"ann"})");
  EXPECT_EQ(plain.request->max_new_tokens, 7);
  EXPECT_EQ(plain.request->prompt, "");

  const ParsedLine batch = parse_request_line(
      R"({"custom_id": "c2", "method": "POST", "url": "/v1/chat/completions",)"
      R"( "body": {"model": "m", "messages": [{"role": "user", "content": "Hi"}],)"
      R"( "max_tokens": 9, "temperature": 0.5}})",
      3);
  ASSERT_TRUE(batch.request) << batch.error->reason;
  EXPECT_EQ(batch.request->id, "c2");
  ASSERT_TRUE(batch.request->messages);
  EXPECT_EQ((*batch.request->messages)[0]["role"], "user");
  EXPECT_EQ(batch.request->max_new_tokens, 9);
  // Without a url, the body's messages make it a chat request.
  const ParsedLine bare =
      parse_request_line(R"({"custom_id": "c3", "body": {"messages": [{"role": "user",)"
                         R"( "content": "x"}]}})",
                         4);
  ASSERT_TRUE(bare.request) << bare.error->reason;
  EXPECT_TRUE(bare.request->messages);
  // A plain prompt has none.
  EXPECT_FALSE(parse_request_line(R"({"id": "p", "prompt": "x"})", 5).request->messages);
}

// OpenAI's token-array prompt: one prompt of ids, in both formats, read as given.
TEST(RequestLine, TokenIdPromptsInBothFormats) {
  const ParsedLine plain = parse_request_line(R"({"id": "t", "prompt": [504, 3575, 0]})", 1);
  ASSERT_TRUE(plain.request);
  EXPECT_EQ(plain.request->prompt_ids, (std::vector<int32_t>{504, 3575, 0}));
  EXPECT_TRUE(plain.request->prompt.empty());
  const ParsedLine batch =
      parse_request_line(R"({"custom_id": "u", "body": {"prompt": [7], "max_tokens": 2}})", 2);
  ASSERT_TRUE(batch.request);
  EXPECT_EQ(batch.request->prompt_ids, (std::vector<int32_t>{7}));
  const ParsedLine text = parse_request_line(R"({"id": "s", "prompt": "x"})", 3);
  EXPECT_FALSE(text.request->prompt_ids);
}

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
        BadLine{R"({"id": "a", "prompt": []})", "non-empty list of token ids", "a"},
        BadLine{R"({"id": "a", "prompt": [3, -1]})", "'prompt' holds -1, not a token id", "a"},
        BadLine{R"({"id": "a", "prompt": [3, 1.5]})", "'prompt' must be a string", "a"},
        BadLine{R"({"custom_id": "c", "body": {"prompt": [1, 4294967296]}})",
                "'body.prompt' holds 4294967296, not a token id", "c"},
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
                "'body.messages' must be a non-empty list of {role, content}", "c"},
        BadLine{R"({"custom_id": "c", "url": "/v1/embeddings", "body": {"input": "x"}})",
                "only \"/v1/completions\" (with a prompt) and \"/v1/chat/completions\"", "c"},
        BadLine{R"({"custom_id": "c", "url": "/v1/chat/completions", "body": {"prompt": "x"}})",
                "missing 'body.messages'", "c"},
        BadLine{R"({"custom_id": "c", "url": "/v1/completions", "body": {"messages": [
                    {"role": "user", "content": "x"}]}})",
                "'body.messages' is for \"/v1/chat/completions\"", "c"},
        BadLine{R"({"id": "m", "prompt": "x", "messages": [{"role": "user", "content": "x"}]})",
                "'prompt' and 'messages' both given", "m"},
        BadLine{R"({"id": "m", "messages": {"role": "user"}})",
                "'messages' must be a non-empty list", "m"},
        BadLine{R"({"id": "m", "messages": [{"role": "user", "content": "a"}, "hi"]})",
                "'messages[1]' must be an object", "m"},
        BadLine{R"({"id": "m", "messages": [{"content": "a"}]})", "missing 'messages[0].role'",
                "m"},
        BadLine{R"({"id": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]})",
                "'messages[0].content' must be a string (content parts are not supported)", "m"},
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
