// Character classes of the GPT-2 pre-tokenization regex, over Unicode code points.
#pragma once

namespace h2oflex::tokenizer {

// The four classes the GPT-2 pattern distinguishes; every code point is exactly one of them.
enum class CharClass : unsigned char { kLetter, kNumber, kWhitespace, kOther };

// \p{L}: general categories Lu Ll Lt Lm Lo.
bool is_letter(char32_t cp);
// \p{N}: general categories Nd Nl No.
bool is_number(char32_t cp);
// \s as the reference regex engine (Oniguruma) reads it: the Unicode White_Space property.
bool is_whitespace(char32_t cp);

CharClass classify(char32_t cp);

// The Unicode version the letter and number tables were generated from.
const char* unicode_tables_version();

}  // namespace h2oflex::tokenizer
