#include "models/tokenizer/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "models/tokenizer/utf8.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex::tokenizer {
namespace {

// The Unicode White_Space property (stable since Unicode 6.3), as class members.
constexpr std::string_view kWhiteSpaceMembers =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

pcre2_code* as_code(void* p) {
  return static_cast<pcre2_code*>(p);
}

}  // namespace

std::string with_white_space_classes(std::string_view pattern, const std::string& where) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpaceMembers)
                        : "[" + std::string(kWhiteSpaceMembers) + "]";
      } else if (e == 'S') {
        H2OFLEX_INPUT_CHECK(!in_class, where, ": \\S inside a character class is not supported ",
                            "(write [^\\s...] instead)");
        out += "[^" + std::string(kWhiteSpaceMembers) + "]";
      } else if (e == 'Q') {  // \Q...\E quotes its text: copy it untouched
        const size_t end = pattern.find("\\E", i + 1);
        const size_t stop = end == std::string_view::npos ? pattern.size() : end + 2;
        out += "\\Q";
        out.append(pattern.substr(i + 1, stop - (i + 1)));
        i = stop - 1;
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t end = pattern.find(":]", i + 2);  // a POSIX class such as [:alpha:]
      if (end != std::string_view::npos) {
        out.append(pattern.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

RegexSplitter::RegexSplitter(std::string_view pattern, bool literal, const std::string& where)
    : code_(nullptr) {
  const std::string source =
      literal ? std::string(pattern) : with_white_space_classes(pattern, where);
  // PCRE2_LITERAL admits no UCP (nothing in a literal depends on Unicode properties).
  const uint32_t options =
      PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw InputError(detail::concat(where, ": PCRE2 cannot compile the pattern ",
                                    quote_excerpt(pattern), ": ",
                                    reinterpret_cast<const char*>(message)));
  }
  // JIT is only a speed-up; the interpreter gives the same matches where JIT is unavailable.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = code;
}

RegexSplitter::~RegexSplitter() {
  pcre2_code_free(as_code(code_));
}

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(as_code(code_), nullptr);
  H2OFLEX_CHECK(match != nullptr, "out of memory for PCRE2 match data");
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0;  // start of the text not yet emitted
  size_t pos = 0;        // where the next search starts
  while (pos <= text.size()) {
    const int rc = pcre2_match(as_code(code_), subject, text.size(), pos, 0, match, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(match);
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw InputError(detail::concat("the Split pattern failed on a text of ", text.size(),
                                      " bytes: ", reinterpret_cast<const char*>(message)));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
    const size_t start = ov[0];
    const size_t end = ov[1];
    if (gap_start < start) out.push_back(text.substr(gap_start, start - gap_start));
    gap_start = start;
    if (end > start) {
      out.push_back(text.substr(start, end - start));
      gap_start = end;
      pos = end;
    } else {
      // An empty match only marks a cut; search again one character further on.
      if (start >= text.size()) break;
      pos = start + decode_utf8_at(text, start).length;
    }
  }
  if (gap_start < text.size()) out.push_back(text.substr(gap_start));
  pcre2_match_data_free(match);
}

}  // namespace h2oflex::tokenizer
