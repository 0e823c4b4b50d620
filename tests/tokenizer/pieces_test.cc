// Building blocks: UTF-8 handling, byte-level mapping, pre-tokenization, character classes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/gpt2_pretokenizer.h"
#include "models/tokenizer/unicode_classes.h"
#include "models/tokenizer/utf8.h"

namespace h2oflex::tokenizer {
namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : split_gpt2(text)) out.emplace_back(p);
  return out;
}

using Pieces = std::vector<std::string>;

TEST(Gpt2Split, WhitespaceRules) {
  EXPECT_EQ(split("a  b"), (Pieces{"a", " ", " b"}));
  EXPECT_EQ(split("a \tb"), (Pieces{"a", " ", "\t", "b"}));
  EXPECT_EQ(split("a\tb"), (Pieces{"a", "\t", "b"}));
  EXPECT_EQ(split("a   "), (Pieces{"a", "   "}));
  EXPECT_EQ(split("  !"), (Pieces{" ", " !"}));
  EXPECT_EQ(split(" 12 ab"), (Pieces{" 12", " ab"}));
  EXPECT_EQ(split("\n\n x"), (Pieces{"\n\n", " x"}));
  EXPECT_EQ(split(""), Pieces{});
}

TEST(Gpt2Split, Contractions) {
  EXPECT_EQ(split("it's"), (Pieces{"it", "'s"}));
  EXPECT_EQ(split("IT'S"), (Pieces{"IT", "'", "S"}));  // the pattern is case-sensitive
  EXPECT_EQ(split("we'll've"), (Pieces{"we", "'ll", "'ve"}));
  EXPECT_EQ(split("'sup"), (Pieces{"'s", "up"}));
  EXPECT_EQ(split("!'s"), (Pieces{"!'", "s"}));  // the apostrophe joins a punctuation run
}

TEST(Gpt2Split, ClassesAndInvalidBytes) {
  EXPECT_EQ(split("abc123def"), (Pieces{"abc", "123", "def"}));
  EXPECT_EQ(split("e\xCC\x81t\xC3\xA9"), (Pieces{"e", "\xCC\x81", "t\xC3\xA9"}));  // U+0301 is Mn
  EXPECT_EQ(split("a\xFF\xFE b"), (Pieces{"a", "\xFF\xFE", " b"}));
  EXPECT_EQ(split(" \xE2\x82"), (Pieces{" \xE2\x82"}));
  // An overlong encoding of 'A' is not a letter.
  EXPECT_EQ(split("x\xC1\x81y"), (Pieces{"x", "\xC1\x81", "y"}));
}

TEST(UnicodeClasses, KnownCodePoints) {
  EXPECT_TRUE(is_letter(U'a'));
  EXPECT_TRUE(is_letter(U'\u00E9'));
  EXPECT_TRUE(is_letter(U'\u4E2D'));   // CJK
  EXPECT_TRUE(is_letter(U'\u02B0'));   // Lm
  EXPECT_FALSE(is_letter(U'\u0301'));  // Mn
  EXPECT_FALSE(is_letter(U'\U0001F600'));
  EXPECT_TRUE(is_number(U'\u0663'));  // Arabic-Indic digit, Nd
  EXPECT_TRUE(is_number(U'\u216B'));  // Roman numeral, Nl
  EXPECT_TRUE(is_number(U'\u00BD'));  // vulgar fraction, No
  EXPECT_FALSE(is_number(U'x'));
  EXPECT_TRUE(is_whitespace(U'\u3000'));
  EXPECT_TRUE(is_whitespace(U'\u0085'));
  EXPECT_FALSE(is_whitespace(U'\u200B'));  // zero width space is Cf
  EXPECT_FALSE(is_whitespace(U'\x1C'));
  EXPECT_FALSE(is_whitespace(U'\u180E'));
  EXPECT_STREQ(unicode_tables_version(), "16.0.0");
}

TEST(UnicodeClasses, EveryCodePointMatchesTheReference) {
  // Runs of the class HF tokenizers gives each code point (tools/gen_tokenizer_fixtures.py).
  std::ifstream in(std::string(H2OFLEX_SOURCE_DIR) + "/tests/fixtures/tokenizer/char_classes.txt");
  ASSERT_TRUE(in.is_open());
  std::string line;
  char32_t covered = 0;
  size_t mismatches = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string first_hex, last_hex, cls;
    fields >> first_hex >> last_hex >> cls;
    const CharClass want = cls == "L"   ? CharClass::kLetter
                           : cls == "N" ? CharClass::kNumber
                           : cls == "S" ? CharClass::kWhitespace
                                        : CharClass::kOther;
    const auto first = char32_t(std::stoul(first_hex, nullptr, 16));
    const auto last = char32_t(std::stoul(last_hex, nullptr, 16));
    for (char32_t cp = first; cp <= last; ++cp) {
      if (classify(cp) != want && ++mismatches <= 5) {
        ADD_FAILURE() << "U+" << std::hex << uint32_t(cp) << " want class " << cls;
      }
    }
    covered += last - first + 1;
  }
  EXPECT_EQ(covered, char32_t(0x110000 - 0x800));  // all but the surrogates
  EXPECT_EQ(mismatches, 0u);
}

TEST(Utf8, LossyMatchesMaximalSubparts) {
  EXPECT_EQ(to_valid_utf8("ok"), "ok");
  EXPECT_EQ(to_valid_utf8("\xE2\x82("), "\xEF\xBF\xBD(");    // one U+FFFD for E2 82
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\x98"), "\xEF\xBF\xBD");  // truncated at the end
  EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(to_valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
  EXPECT_EQ(to_valid_utf8("\xF4\x90\x80\x80").size(), 12u);  // above U+10FFFF
}

TEST(ByteLevel, MappingIsABijectionWithGpt2Spelling) {
  EXPECT_EQ(byte_to_code_point(' '), U'\u0120');   // 'Ġ'
  EXPECT_EQ(byte_to_code_point('\n'), U'\u010A');  // 'Ċ'
  EXPECT_EQ(byte_to_code_point('A'), U'A');
  EXPECT_EQ(byte_to_code_point(0xAD), U'\u0143');
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(code_point_to_byte(byte_to_code_point(uint8_t(b))), uint8_t(b));
  }
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(char(b));
  EXPECT_EQ(symbols_to_bytes(bytes_to_symbols(all)), all);
  EXPECT_EQ(symbols_to_bytes("\xE4\xB8\xAD"), std::nullopt);  // U+4E2D stands for no byte
}

}  // namespace
}  // namespace h2oflex::tokenizer
