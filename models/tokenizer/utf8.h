// Strict UTF-8 decoding that never fails: invalid bytes are reported, not thrown.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace h2oflex::tokenizer {

// One step of decoding. A well-formed sequence gives its code point and length 1..4. Otherwise
// `valid` is false and `length` covers the maximal prefix of a well-formed sequence (at least one
// byte): the unit that Unicode's "maximal subpart" practice replaces with one U+FFFD.
struct Utf8Step {
  char32_t code_point;
  unsigned length;
  bool valid;
};

// Decodes the sequence starting at text[pos] (pos < text.size()). Rejects overlong forms,
// surrogates (U+D800..U+DFFF) and values above U+10FFFF.
Utf8Step decode_utf8_at(std::string_view text, size_t pos);

// Appends the UTF-8 encoding of a code point (cp <= U+10FFFF).
void append_utf8(std::string& out, char32_t cp);

// Returns text with each maximal ill-formed subpart replaced by U+FFFD, the way Python's
// bytes.decode("utf-8", "replace") and Rust's String::from_utf8_lossy do.
std::string to_valid_utf8(std::string_view text);

}  // namespace h2oflex::tokenizer
