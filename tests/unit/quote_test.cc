// Echoed file content: quoted, control bytes escaped, long text cut (issue 14, defect 16).
#include <gtest/gtest.h>

#include <string>

#include "runtime/core/quote.h"

namespace h2oflex {
namespace {

TEST(QuoteExcerpt, PlainTextIsQuotedAsIs) {
  EXPECT_EQ(quote_excerpt("abc def"), "'abc def'");
}

TEST(QuoteExcerpt, EscapeSequencesNeverReachTheTerminal) {
  const std::string q = quote_excerpt("a\x1b[31mred\x07\n\xc2\x9b");
  EXPECT_EQ(q, "'a\\x1b[31mred\\x07\\n\\xc2\\x9b'");
  EXPECT_EQ(q.find('\x1b'), std::string::npos);
}

TEST(QuoteExcerpt, ValidUtf8IsKeptInvalidIsEscaped) {
  EXPECT_EQ(quote_excerpt("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(quote_excerpt("\xff\xc3"), "'\\xff\\xc3'");
  EXPECT_EQ(quote_excerpt("it's"), "'it\\'s'");
}

TEST(QuoteExcerpt, LongTextIsCutAndSaysHowLong) {
  const std::string big(100000, 'x');
  const std::string q = quote_excerpt(big, 10);
  EXPECT_EQ(q, "'xxxxxxxxxx'... (100000 bytes in all)");
}

}  // namespace
}  // namespace h2oflex
