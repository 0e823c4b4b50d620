// The Split pre-tokenizer of tokenizer.json: a regular expression cuts text into pieces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace h2oflex::tokenizer {

// A compiled Split pattern. Hugging Face compiles these patterns with Oniguruma; here PCRE2 runs
// them in UTF and Unicode-property mode, which reads the pattern syntax the same way. The one
// class the two engines define differently, \s (Oniguruma: the White_Space property; PCRE2 adds
// U+180E), is rewritten to White_Space before compiling. \p{...} uses PCRE2's own Unicode data,
// which may be older than the reference's: characters assigned since then count as unassigned.
//
// Immutable after construction; split() may be called from several threads at once.
class RegexSplitter {
 public:
  // `literal`: the pattern is a plain string (tokenizer.json's {"String": ...}), not a regex.
  // Throws InputError starting with `where` when PCRE2 cannot compile the pattern.
  RegexSplitter(std::string_view pattern, bool literal, const std::string& where);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the pieces of `text` in order: each match, and each stretch between matches (Hugging
  // Face's "Isolated" behaviour); they concatenate back to `text`. Bytes that are not well-formed
  // UTF-8 never match, so they end up in the stretches between matches.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  void* code_;  // pcre2_code_8, kept out of the header
};

// The pattern with every \s and \S that stands outside a character class, and every \s inside
// one, replaced by the White_Space set. Throws InputError (prefixed with `where`) for \S inside a
// character class, which has no such rewrite.
std::string with_white_space_classes(std::string_view pattern, const std::string& where);

}  // namespace h2oflex::tokenizer
