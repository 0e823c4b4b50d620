// Building blocks of the other tokenizer kinds: NFC, the Split pattern rewrite and matching,
// the Digits pre-tokenizer, added-token matching options, and the decoder steps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/tokenizer/added_tokens.h"
#include "models/tokenizer/nfc.h"
#include "models/tokenizer/pipeline.h"
#include "models/tokenizer/regex_split.h"
#include "runtime/core/error.h"

namespace h2oflex::tokenizer {
namespace {

using Pieces = std::vector<std::string>;

TEST(Nfc, ComposesReordersAndKeepsExclusions) {
  EXPECT_EQ(to_nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(to_nfc("\u212b"), "\u00c5");              // singleton: ANGSTROM SIGN -> Å
  EXPECT_EQ(to_nfc("\uf900"), "\u8c48");              // CJK compatibility ideograph
  EXPECT_EQ(to_nfc("\u0958"), "\u0915\u093c");        // excluded from composition
  EXPECT_EQ(to_nfc("\u0344"), "\u0308\u0301");        // non-starter decomposition
  EXPECT_EQ(to_nfc("\u1e9b\u0323"), "\u1e9b\u0323");  // UAX #15's example
  EXPECT_EQ(to_nfc("a\u0302\u0323"), "\u1ead");       // marks reordered, then composed
  EXPECT_EQ(to_nfc("a\u0323\u0302"), "\u1ead");
  EXPECT_EQ(to_nfc("A\u0301\u0328\u0300"), "\u0104\u0301\u0300");  // blocked by an equal class
  EXPECT_EQ(to_nfc("e\u0334\u0301"), "\u00e9\u0334");              // a lower class does not block
  EXPECT_EQ(to_nfc("\u0226\u0304"), "\u01e0");                     // composes twice
}

TEST(Nfc, HangulAsciiAndInvalidBytes) {
  EXPECT_EQ(to_nfc("\u1100\u1161\u11a8"), "\uac01");  // L V T jamo -> one syllable
  EXPECT_EQ(to_nfc("\uac00\u11a8"), "\uac01");        // LV syllable + T
  EXPECT_EQ(to_nfc("\uac00\u0302"), "\uac00\u0302");
  EXPECT_EQ(to_nfc("plain ASCII\r\n"), "plain ASCII\r\n");
  // An invalid byte is kept and blocks composition across it.
  EXPECT_EQ(to_nfc("e\xff\u0301"), "e\xff\u0301");
  EXPECT_EQ(to_nfc("\xe2\x82 e\u0301"), "\xe2\x82 \u00e9");
  EXPECT_STREQ(nfc_tables_version(), "9.0.0");
}

TEST(Nfc, MarksAssignedAfterUnicode9StayWhereTheyStandAsInTheReference) {
  // Hugging Face's NFC has Unicode 9.0's tables: a later mark has class 0 there, so it neither
  // moves before U+0345 (class 240) nor lets anything move past it. Expected strings are HF's.
  EXPECT_EQ(to_nfc("a\u0345\u1ac4"), "a\u0345\u1ac4");  // Unicode 14
  EXPECT_EQ(to_nfc("a\u0345\u1df6"), "a\u0345\u1df6");  // Unicode 10
  EXPECT_EQ(to_nfc("a\u0345\u07fd"), "a\u0345\u07fd");  // Unicode 11
  EXPECT_EQ(to_nfc("\u1dfc\u1ac4"), "\u1dfc\u1ac4");
  EXPECT_EQ(to_nfc("a\u0345\u1dfb"), "a\u1dfb\u0345");  // Unicode 9: reordered
}

Pieces split(const std::string& pattern, const std::string& text) {
  const RegexSplitter re(pattern, false, "test");
  std::vector<std::string_view> views;
  re.split(text, views);
  return Pieces(views.begin(), views.end());
}

TEST(RegexSplit, MatchesAndTheGapsBetweenThem) {
  EXPECT_EQ(split("\\p{N}{1,3}", "ab12345cd"), (Pieces{"ab", "123", "45", "cd"}));
  EXPECT_EQ(split("(?i:'s|'t)", "IT'S it's"), (Pieces{"IT", "'S", " it", "'s"}));
  EXPECT_EQ(split("x*", "abxxc"), (Pieces{"a", "b", "xx", "c"}));  // empty matches only cut
  EXPECT_EQ(split("\\p{L}+", "a\xff\xfe b"), (Pieces{"a", "\xff\xfe ", "b"}));  // never match
  EXPECT_EQ(split("\\p{L}+", ""), Pieces{});
  const RegexSplitter literal("a.", true, "test");
  std::vector<std::string_view> views;
  literal.split("xa.ya.ab", views);
  EXPECT_EQ(Pieces(views.begin(), views.end()), (Pieces{"x", "a.", "y", "a.", "ab"}));
}

TEST(RegexSplit, WhiteSpaceIsOniguruma) {
  // U+180E left White_Space in Unicode 6.3; PCRE2's own \s still counts it.
  EXPECT_EQ(split("\\s+", "a\u180eb"), (Pieces{"a\u180eb"}));
  EXPECT_EQ(split("\\s+", "a\u2003\u3000b"), (Pieces{"a", "\u2003\u3000", "b"}));
  EXPECT_EQ(split("[^\\s\\p{L}]+", "a\u180e!b"), (Pieces{"a", "\u180e!", "b"}));
  EXPECT_EQ(split("\\s+(?!\\S)", "a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(with_white_space_classes("\\\\s[\\]\\s]\\Q\\s\\E", "w"),
            "\\\\s[\\]\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}"
            "\\x{2029}\\x{202F}\\x{205F}\\x{3000}]\\Q\\s\\E");
  EXPECT_THROW(with_white_space_classes("[\\S]", "w"), InputError);
  EXPECT_THROW(RegexSplitter("(", false, "w"), InputError);
}

Pieces digits(bool individual, const std::string& text) {
  std::vector<Piece> out;
  pre_tokenize({{PreTokenizerStep::Kind::kDigits, nullptr, "", {}, individual}}, text, true, out);
  Pieces r;
  for (const Piece& p : out) r.push_back(p.text);
  return r;
}

TEST(Digits, CutsNumericCharactersAsTheReference) {
  // Expected pieces are Hugging Face's Digits(individual_digits=...).pre_tokenize_str: numeric
  // is Rust's char::is_numeric (Nd, Nl, No), so other scripts' digits, fractions and circled
  // numbers are cut out too.
  EXPECT_EQ(digits(false, "a12b345"), (Pieces{"a", "12", "b", "345"}));
  EXPECT_EQ(digits(false, "\u00bdx\u2460\u2461"), (Pieces{"\u00bd", "x", "\u2460\u2461"}));
  EXPECT_EQ(digits(false, "\u0663\u06645 6"), (Pieces{"\u0663\u06645", " ", "6"}));
  EXPECT_EQ(digits(true, "a12b345"), (Pieces{"a", "1", "2", "b", "3", "4", "5"}));
  EXPECT_EQ(digits(true, "\u00bdx\u2460\u2461"), (Pieces{"\u00bd", "x", "\u2460", "\u2461"}));
  EXPECT_EQ(digits(true, "\u0663\u06645 6"), (Pieces{"\u0663", "\u0664", "5", " ", "6"}));
  EXPECT_EQ(digits(true,
                   "1\xff"
                   "2"),
            (Pieces{"1", "\xff", "2"}));  // an invalid byte is no digit
}

std::vector<std::pair<std::string, int32_t>> segments(const AddedTokenMatcher& m,
                                                      const std::string& text) {
  std::vector<TextSegment> out;
  m.split(text, out);
  std::vector<std::pair<std::string, int32_t>> r;
  for (const TextSegment& s : out) r.emplace_back(std::string(s.text), s.id);
  return r;
}

TEST(AddedTokens, LongestLeftmostAndMatchOptions) {
  AddedTokenMatcher m;
  m.add("<a>", 1, false, false, false);
  m.add("<a><b>", 2, false, false, false);
  m.add("[w]", 3, /*single_word=*/true, false, false);
  m.add("<l>", 4, false, /*lstrip=*/true, false);
  m.add("<r>", 5, false, false, /*rstrip=*/true);
  using Segs = std::vector<std::pair<std::string, int32_t>>;
  EXPECT_EQ(segments(m, "x<a><b><a>"), (Segs{{"x", -1}, {"<a><b>", 2}, {"<a>", 1}}));
  EXPECT_EQ(segments(m, "x [w] y"), (Segs{{"x ", -1}, {"[w]", 3}, {" y", -1}}));
  EXPECT_EQ(segments(m, "x[w] y"), (Segs{{"x[w] y", -1}}));  // a word character before it
  EXPECT_EQ(segments(m, "[w]_"), (Segs{{"[w]_", -1}}));
  EXPECT_EQ(segments(m, "a \t<l>b"), (Segs{{"a", -1}, {" \t<l>", 4}, {"b", -1}}));
  EXPECT_EQ(segments(m, "a<r> \n b"), (Segs{{"a", -1}, {"<r> \n ", 5}, {"b", -1}}));
  EXPECT_EQ(segments(m, "<r> <l>"), (Segs{{"<r> ", 5}, {"<l>", 4}}));  // lstrip stops at a match
}

TEST(Decoder, SentencePieceSteps) {
  const std::vector<DecoderStep> steps = {{DecoderStep::Kind::kReplace, "\u2581", " ", 0, 0, false},
                                          {DecoderStep::Kind::kByteFallback, "", "", 0, 0, false},
                                          {DecoderStep::Kind::kFuse, "", "", 0, 0, false},
                                          {DecoderStep::Kind::kStrip, " ", "", 1, 0, false}};
  EXPECT_EQ(decode_tokens(steps, {"\u2581hi", "<0xE4>", "<0xB8>", "<0xAD>", "\u2581x"}, true),
            "hi\u4e2d x");
  // A broken byte run: one U+FFFD per byte token, as Hugging Face does; lossless keeps bytes.
  EXPECT_EQ(decode_tokens(steps, {"a", "<0xE4>", "<0xB8>", "b"}, true), "a\ufffd\ufffdb");
  EXPECT_EQ(decode_tokens(steps, {"a", "<0xE4>", "<0xB8>", "b"}, false),
            "a\xe4\xb8"
            "b");
  EXPECT_EQ(decode_tokens({}, {"a", "b"}, true), "a b");  // no decoder: joined with spaces
  const std::vector<DecoderStep> metaspace = {
      {DecoderStep::Kind::kMetaspace, "\u2581", "", 0, 0, true}};
  EXPECT_EQ(decode_tokens(metaspace, {"\u2581\u2581a", "\u2581b"}, true), "a b");
}

}  // namespace
}  // namespace h2oflex::tokenizer
