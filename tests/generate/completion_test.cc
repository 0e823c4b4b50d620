// From generated ids to a result: EOS, the request's own limit and stop strings, checked against
// texts decoded independently with the tokenizer.
#include <gtest/gtest.h>

#include "experiments/generate/completion.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::generate {
namespace {

using testing::demo_tokenizer;

std::vector<int32_t> ids_of(const std::string& text) {
  return demo_tokenizer().encode(text, /*add_bos=*/false);
}

std::string decoded(const std::vector<int32_t>& ids, size_t n) {
  return demo_tokenizer().decode(std::span<const int32_t>(ids.data(), n));
}

TEST(Completion, RunsToTheLimit) {
  const auto ids = ids_of("the quick brown fox jumps over the lazy dog");
  ASSERT_GE(ids.size(), 6u);
  const Completion c = finish_completion(demo_tokenizer(), ids, 5, {2}, {});
  EXPECT_EQ(c.finish_reason, "length");
  EXPECT_EQ(c.completion_tokens, 5);
  EXPECT_EQ(c.text, decoded(ids, 5));

  const Completion all = finish_completion(demo_tokenizer(), ids, 1000, {2}, {});
  EXPECT_EQ(all.finish_reason, "length");
  EXPECT_EQ(all.completion_tokens, static_cast<int>(ids.size()));
  EXPECT_EQ(all.text, "the quick brown fox jumps over the lazy dog");
}

TEST(Completion, StopsAtEos) {
  auto ids = ids_of("hello world");
  const size_t n = ids.size();
  ids.push_back(2);
  for (int32_t x : ids_of(" never shown")) ids.push_back(x);
  const Completion c = finish_completion(demo_tokenizer(), ids, 100, {2}, {});
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_EQ(c.completion_tokens, static_cast<int>(n + 1));  // EOS counts
  EXPECT_EQ(c.text, "hello world");
  // EOS beyond the request's own limit does not count.
  const Completion cut = finish_completion(demo_tokenizer(), ids, static_cast<int>(n), {2}, {});
  EXPECT_EQ(cut.finish_reason, "length");
  EXPECT_EQ(cut.text, "hello world");
  // With EOS ignored (no stop ids) generation runs on; the special token is not shown.
  const Completion on = finish_completion(demo_tokenizer(), ids, 100, {}, {});
  EXPECT_EQ(on.finish_reason, "length");
  EXPECT_EQ(on.text, "hello world never shown");
}

TEST(Completion, CutsBeforeTheEarliestStopString) {
  const std::string full = "alpha beta. gamma END delta";
  const auto ids = ids_of(full);
  const Completion c = finish_completion(demo_tokenizer(), ids, 100, {2}, {"END", "."});
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_EQ(c.text, "alpha beta");
  // The count reaches the first token whose text completes "." and no further.
  size_t need = 0;
  while (decoded(ids, need).find('.') == std::string::npos) ++need;
  EXPECT_EQ(c.completion_tokens, static_cast<int>(need));

  const Completion end_only = finish_completion(demo_tokenizer(), ids, 100, {2}, {"END"});
  EXPECT_EQ(end_only.text, "alpha beta. gamma ");
  // A stop string that would appear only after the limit does not apply.
  const Completion limited = finish_completion(demo_tokenizer(), ids, 2, {2}, {"END"});
  EXPECT_EQ(limited.finish_reason, "length");
  EXPECT_EQ(limited.text, decoded(ids, 2));
}

TEST(Completion, StopStringSpanningTokens) {
  const std::string full = "one two three four";
  const auto ids = ids_of(full);
  const Completion c = finish_completion(demo_tokenizer(), ids, 100, {2}, {"o th"});
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_EQ(c.text, "one tw");
}

TEST(Completion, TextIsValidUtf8WhenCutInsideACharacter) {
  // Byte-level tokens can split a multi-byte character; a limit there must not emit half of it.
  const auto ids = ids_of("日本語のテキスト");
  for (size_t n = 0; n <= ids.size(); ++n) {
    const Completion c = finish_completion(demo_tokenizer(), ids, static_cast<int>(n), {2}, {});
    EXPECT_EQ(c.text, decoded(ids, n)) << n;
    EXPECT_FALSE(nlohmann::json(c.text).dump().empty());  // dump throws on invalid UTF-8
  }
}

}  // namespace
}  // namespace h2oflex::generate
