#include "models/tokenizer/unicode_classes.h"

#include <algorithm>

#include "models/tokenizer/unicode_tables.h"

namespace h2oflex::tokenizer {
namespace {

bool in_ranges(char32_t cp, const tables::CodePointRange* ranges, size_t count) {
  const tables::CodePointRange* end = ranges + count;
  // First range whose last code point is >= cp; cp is inside iff that range starts at or before it.
  const tables::CodePointRange* it = std::lower_bound(
      ranges, end, cp, [](const tables::CodePointRange& r, char32_t c) { return r.last < c; });
  return it != end && it->first <= cp;
}

}  // namespace

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(cp, tables::kLetterRanges, tables::kLetterRangesCount);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(cp, tables::kNumberRanges, tables::kNumberRangesCount);
}

bool is_whitespace(char32_t cp) {
  // White_Space has been this set since Unicode 6.3 (U+180E left it then).
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

CharClass classify(char32_t cp) {
  if (is_letter(cp)) return CharClass::kLetter;
  if (is_number(cp)) return CharClass::kNumber;
  if (is_whitespace(cp)) return CharClass::kWhitespace;
  return CharClass::kOther;
}

const char* unicode_tables_version() {
  return tables::kUnicodeVersion;
}

}  // namespace h2oflex::tokenizer
