#include "models/tokenizer/gpt2_pretokenizer.h"

#include <cstdint>

#include "models/tokenizer/unicode_classes.h"
#include "models/tokenizer/utf8.h"

namespace h2oflex::tokenizer {
namespace {

// One character of the input: where it starts, its class, and the code point when it matters
// to the pattern (ASCII space, apostrophe, contraction letters); invalid bytes get 0xFFFFFFFF.
struct Unit {
  size_t offset;
  char32_t cp;
  CharClass cls;
};

constexpr char32_t kInvalid = 0xFFFFFFFF;

std::vector<Unit> to_units(std::string_view text) {
  std::vector<Unit> units;
  units.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Step step = decode_utf8_at(text, pos);
    if (step.valid) {
      units.push_back({pos, step.code_point, classify(step.code_point)});
      pos += step.length;
    } else {
      units.push_back({pos, kInvalid, CharClass::kOther});
      pos += 1;  // one unit per invalid byte
    }
  }
  return units;
}

// Length in units of the contraction ('s 't 're 've 'm 'll 'd, lowercase only, as in the
// pattern) starting at unit i, or 0.
size_t contraction_at(const std::vector<Unit>& u, size_t i) {
  if (u[i].cp != '\'' || i + 1 >= u.size()) return 0;
  const char32_t a = u[i + 1].cp;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= u.size()) return 0;
  const char32_t b = u[i + 2].cp;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// Length of ` ?X+` at unit i for a class X other than whitespace, or 0.
size_t optional_space_run_at(const std::vector<Unit>& u, size_t i, CharClass cls) {
  size_t j = i;
  if (u[j].cp == ' ' && j + 1 < u.size() && u[j + 1].cls == cls) ++j;
  if (u[j].cls != cls) return 0;
  while (j < u.size() && u[j].cls == cls) ++j;
  return j - i;
}

// Length of `\s+(?!\S)|\s+` at unit i (u[i] is whitespace). The first alternative takes the
// whole run at the end of the text, and otherwise backs off by one so the last whitespace
// character can join the next piece (" word"); a single whitespace unit falls to `\s+`.
size_t whitespace_at(const std::vector<Unit>& u, size_t i) {
  size_t end = i;
  while (end < u.size() && u[end].cls == CharClass::kWhitespace) ++end;
  if (end == u.size()) return end - i;
  if (end - i >= 2) return end - i - 1;
  return 1;
}

size_t piece_length_at(const std::vector<Unit>& u, size_t i) {
  if (size_t n = contraction_at(u, i)) return n;
  for (CharClass cls : {CharClass::kLetter, CharClass::kNumber, CharClass::kOther}) {
    if (size_t n = optional_space_run_at(u, i, cls)) return n;
  }
  return whitespace_at(u, i);  // every unit is in one of the four classes
}

}  // namespace

std::vector<std::string_view> split_gpt2(std::string_view text) {
  const std::vector<Unit> units = to_units(text);
  std::vector<std::string_view> pieces;
  size_t i = 0;
  while (i < units.size()) {
    const size_t n = piece_length_at(units, i);
    const size_t begin = units[i].offset;
    const size_t end = i + n < units.size() ? units[i + n].offset : text.size();
    pieces.push_back(text.substr(begin, end - begin));
    i += n;
  }
  return pieces;
}

}  // namespace h2oflex::tokenizer
