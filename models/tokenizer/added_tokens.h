// Finding added tokens (special tokens such as "<s>" or "<|eot_id|>") inside text.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace h2oflex::tokenizer {

// A stretch of text: an added token (id >= 0) or plain text to tokenize (id < 0).
struct TextSegment {
  std::string_view text;
  size_t offset;  // where `text` starts in the string that was split
  int32_t id;
};

// Splits text around added tokens the way Hugging Face's added vocabulary does: leftmost match
// first, the longest token at that position, matches never overlap. Per token, `single_word`
// keeps only matches with no word character right before or after them (a discarded match still
// consumes its text), `lstrip` / `rstrip` take the whitespace before / after the match into it.
// Word characters are letters, numbers and '_' (Hugging Face's \w also counts combining marks
// and connector punctuation).
class AddedTokenMatcher {
 public:
  void add(std::string pattern, int32_t id, bool single_word, bool lstrip, bool rstrip);
  bool empty() const { return tokens_.empty(); }

  // Appends the segments of `text` in order; they concatenate back to it. Empty text gives none.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  struct Entry {
    std::string pattern;
    int32_t id;
    bool single_word;
    bool lstrip;
    bool rstrip;
  };
  std::vector<Entry> tokens_;  // longest first, so the first hit at a position is the longest
  std::array<bool, 256> first_byte_{};
};

}  // namespace h2oflex::tokenizer
