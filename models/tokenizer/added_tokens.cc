#include "models/tokenizer/added_tokens.h"

#include <algorithm>
#include <optional>

#include "models/tokenizer/unicode_classes.h"
#include "models/tokenizer/utf8.h"

namespace h2oflex::tokenizer {
namespace {

bool is_word_char(char32_t cp) {
  return cp == '_' || is_letter(cp) || is_number(cp);
}

// The code point that ends text[0, end), or nullopt for an invalid byte.
std::optional<char32_t> last_code_point(std::string_view text) {
  size_t start = text.size() - 1;
  // Step back over continuation bytes to the lead byte (at most 3).
  while (start > 0 && text.size() - start < 4 && (uint8_t(text[start]) & 0xC0) == 0x80) --start;
  const Utf8Step step = decode_utf8_at(text, start);
  if (!step.valid || start + step.length != text.size()) return std::nullopt;
  return step.code_point;
}

bool ends_with_word(std::string_view text) {
  if (text.empty()) return false;
  const auto cp = last_code_point(text);
  return cp && is_word_char(*cp);
}

bool starts_with_word(std::string_view text) {
  if (text.empty()) return false;
  const Utf8Step step = decode_utf8_at(text, 0);
  return step.valid && is_word_char(step.code_point);
}

// Start of the whitespace run that ends `text`.
size_t trailing_space_start(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    const auto cp = last_code_point(text.substr(0, end));
    if (!cp || !is_whitespace(*cp)) break;
    size_t n = 1;
    while (n < end && (uint8_t(text[end - n]) & 0xC0) == 0x80) ++n;
    end -= n;
  }
  return end;
}

// Length of the whitespace run that starts `text`.
size_t leading_space_length(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Step step = decode_utf8_at(text, pos);
    if (!step.valid || !is_whitespace(step.code_point)) break;
    pos += step.length;
  }
  return pos;
}

}  // namespace

void AddedTokenMatcher::add(std::string pattern, int32_t id, bool single_word, bool lstrip,
                            bool rstrip) {
  if (pattern.empty()) return;  // matches nothing, as in Hugging Face
  first_byte_[uint8_t(pattern[0])] = true;
  tokens_.push_back({std::move(pattern), id, single_word, lstrip, rstrip});
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const Entry& a, const Entry& b) {
    return a.pattern.size() > b.pattern.size();
  });
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  size_t emitted = 0;  // text before this is already in `out`
  size_t pos = 0;
  while (pos < text.size()) {
    const Entry* hit = nullptr;
    if (first_byte_[uint8_t(text[pos])]) {
      for (const Entry& e : tokens_) {
        if (text.substr(pos).starts_with(e.pattern)) {
          hit = &e;
          break;
        }
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t start = pos;
    size_t stop = pos + hit->pattern.size();
    pos = stop;
    if (hit->single_word && ((start > 0 && ends_with_word(text.substr(0, start))) ||
                             (stop < text.size() && starts_with_word(text.substr(stop))))) {
      continue;
    }
    if (hit->lstrip) start = std::max(trailing_space_start(text.substr(0, start)), emitted);
    if (hit->rstrip) stop += leading_space_length(text.substr(stop));
    if (emitted < start) out.push_back({text.substr(emitted, start - emitted), emitted, -1});
    out.push_back({text.substr(start, stop - start), start, hit->id});
    emitted = stop;
    pos = stop;
  }
  if (emitted < text.size()) out.push_back({text.substr(emitted), emitted, -1});
}

}  // namespace h2oflex::tokenizer
