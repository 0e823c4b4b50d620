#include "models/tokenizer/nfc.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "models/tokenizer/nfc_tables.h"
#include "models/tokenizer/utf8.h"

namespace h2oflex::tokenizer {
namespace {

// Hangul syllables are composed of a leading consonant, a vowel and an optional trailing
// consonant; their decomposition is arithmetic (Unicode 3.12).
constexpr char32_t kHangulBase = 0xAC00;
constexpr char32_t kLeadBase = 0x1100;
constexpr char32_t kVowelBase = 0x1161;
constexpr char32_t kTrailBase = 0x11A7;
constexpr char32_t kVowelCount = 21;
constexpr char32_t kTrailCount = 28;
constexpr char32_t kLeadCount = 19;
constexpr char32_t kSyllableCount = kLeadCount * kVowelCount * kTrailCount;

// Stands for a byte that is not well-formed UTF-8: not a code point, class 0, never composes.
constexpr char32_t kInvalidByteTag = 0x80000000u;

uint64_t pair_key(char32_t a, char32_t b) {
  return (uint64_t(a) << 32) | b;
}

struct NfcData {
  std::unordered_map<char32_t, std::pair<char32_t, char32_t>> decompose;
  std::unordered_map<uint64_t, char32_t> compose;

  NfcData() {
    decompose.reserve(tables::kCanonicalDecompositionsCount);
    for (size_t i = 0; i < tables::kCanonicalDecompositionsCount; ++i) {
      const tables::CanonicalDecomposition& d = tables::kCanonicalDecompositions[i];
      decompose.emplace(d.code_point, std::make_pair(d.first, d.second));
      if (d.composes) compose.emplace(pair_key(d.first, d.second), d.code_point);
    }
  }
};

const NfcData& data() {
  static const NfcData instance;
  return instance;
}

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300 || cp >= kInvalidByteTag) return 0;
  const tables::CombiningClassRun* begin = tables::kCombiningClassRuns;
  const tables::CombiningClassRun* end = begin + tables::kCombiningClassRunsCount;
  const auto* it = std::lower_bound(
      begin, end, cp, [](const tables::CombiningClassRun& r, char32_t c) { return r.last < c; });
  return it != end && it->first <= cp ? it->combining_class : 0;
}

void decompose_into(char32_t cp, const NfcData& d, std::vector<char32_t>& out) {
  if (cp >= kHangulBase && cp < kHangulBase + kSyllableCount) {
    const char32_t index = cp - kHangulBase;
    out.push_back(kLeadBase + index / (kVowelCount * kTrailCount));
    out.push_back(kVowelBase + (index % (kVowelCount * kTrailCount)) / kTrailCount);
    if (index % kTrailCount != 0) out.push_back(kTrailBase + index % kTrailCount);
    return;
  }
  const auto it = d.decompose.find(cp);
  if (it == d.decompose.end()) {
    out.push_back(cp);
    return;
  }
  decompose_into(it->second.first, d, out);
  if (it->second.second != 0) decompose_into(it->second.second, d, out);
}

// The composite of a starter and the following character, or 0.
char32_t compose_pair(char32_t first, char32_t second, const NfcData& d) {
  if (first >= kLeadBase && first < kLeadBase + kLeadCount && second >= kVowelBase &&
      second < kVowelBase + kVowelCount) {
    return kHangulBase + ((first - kLeadBase) * kVowelCount + (second - kVowelBase)) * kTrailCount;
  }
  if (first >= kHangulBase && first < kHangulBase + kSyllableCount &&
      (first - kHangulBase) % kTrailCount == 0 && second > kTrailBase &&
      second < kTrailBase + kTrailCount) {
    return first + (second - kTrailBase);
  }
  const auto it = d.compose.find(pair_key(first, second));
  return it == d.compose.end() ? 0 : it->second;
}

}  // namespace

std::string to_nfc(std::string_view text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return uint8_t(c) < 0x80; })) {
    return std::string(text);  // ASCII is always NFC
  }
  const NfcData& d = data();

  // 1. Full canonical decomposition.
  std::vector<char32_t> cps;
  cps.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = decode_utf8_at(text, pos);
    if (step.valid) {
      decompose_into(step.code_point, d, cps);
    } else {
      for (unsigned i = 0; i < step.length; ++i) {
        cps.push_back(kInvalidByteTag | uint8_t(text[pos + i]));
      }
    }
    pos += step.length;
  }

  // 2. Canonical ordering: each run of non-starters sorted stably by combining class.
  for (size_t i = 0; i < cps.size();) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j, [](char32_t a, char32_t b) {
      return combining_class(a) < combining_class(b);
    });
    i = j;
  }

  // 3. Canonical composition: a character joins the last starter unless a character between them
  // blocks it (has class 0, or a class not below its own).
  std::vector<char32_t> out;
  out.reserve(cps.size());
  size_t starter = SIZE_MAX;  // index in `out` of the last starter
  int last_class = -1;        // class of the last character appended after that starter
  for (char32_t cp : cps) {
    const int cls = combining_class(cp);
    if (starter != SIZE_MAX && cp < kInvalidByteTag && out[starter] < kInvalidByteTag) {
      const bool blocked = last_class != -1 && (last_class == 0 || last_class >= cls);
      if (!blocked) {
        if (const char32_t composite = compose_pair(out[starter], cp, d)) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (cls == 0) {
      starter = out.size();
      last_class = -1;
    } else {
      last_class = cls;
    }
    out.push_back(cp);
  }

  std::string result;
  result.reserve(text.size());
  for (char32_t cp : out) {
    if (cp >= kInvalidByteTag) {
      result.push_back(char(cp & 0xFF));
    } else {
      append_utf8(result, cp);
    }
  }
  return result;
}

const char* nfc_tables_version() {
  return tables::kNfcUnicodeVersion;
}

}  // namespace h2oflex::tokenizer
