#include "models/tokenizer/pipeline.h"

#include <optional>

#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/gpt2_pretokenizer.h"
#include "models/tokenizer/nfc.h"
#include "models/tokenizer/unicode_classes.h"
#include "models/tokenizer/utf8.h"

namespace h2oflex::tokenizer {
namespace {

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

void metaspace(const PreTokenizerStep& step, const Piece& piece, std::vector<Piece>& out) {
  std::string text = replace_all(piece.text, " ", step.replacement);
  const bool prepend = step.prepend == PreTokenizerStep::Prepend::kAlways ||
                       (step.prepend == PreTokenizerStep::Prepend::kFirst && piece.at_start);
  if (prepend && !std::string_view(text).starts_with(step.replacement)) {
    text = step.replacement + text;
  }
  if (!step.split) {
    if (!text.empty()) out.push_back({std::move(text), piece.at_start});
    return;
  }
  // Each replacement starts a new piece ("merged with next").
  size_t start = 0;
  while (start < text.size()) {
    size_t next = text.find(step.replacement, start + 1);
    if (next == std::string::npos) next = text.size();
    out.push_back({text.substr(start, next - start), piece.at_start && start == 0});
    start = next;
  }
}

// Hugging Face's Digits pre-tokenizer: Rust's char::is_numeric (general categories Nd, Nl, No)
// marks the characters cut out, each as its own piece (`individual`) or runs of them as one;
// the stretches between them are pieces too. Bytes that are not well-formed UTF-8 are not
// numeric.
void split_digits(std::string_view text, bool individual, std::vector<std::string_view>& out) {
  size_t start = 0;  // of the piece being built
  bool in_digits = false;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = decode_utf8_at(text, pos);
    const bool digit = step.valid && is_number(step.code_point);
    if (pos > start && (digit != in_digits || (digit && individual))) {
      out.push_back(text.substr(start, pos - start));
      start = pos;
    }
    in_digits = digit;
    pos += step.length;
  }
  if (start < text.size()) out.push_back(text.substr(start));
}

std::optional<uint8_t> byte_token_value(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(token[3]);
  const int lo = hex(token[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return uint8_t(hi * 16 + lo);
}

bool is_valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const Utf8Step step = decode_utf8_at(s, pos);
    if (!step.valid) return false;
    pos += step.length;
  }
  return true;
}

// The byte lengths of the characters of `s` (an invalid byte counts as one character).
std::vector<size_t> char_lengths(std::string_view s) {
  std::vector<size_t> out;
  for (size_t pos = 0; pos < s.size();) {
    const unsigned n = decode_utf8_at(s, pos).length;
    out.push_back(n);
    pos += n;
  }
  return out;
}

void flush_bytes(std::string& bytes, size_t count, bool lossy, std::vector<std::string>& out) {
  if (count == 0) return;
  if (!lossy || is_valid_utf8(bytes)) {
    out.push_back(bytes);
  } else {
    // Hugging Face replaces an invalid run with one U+FFFD per byte token.
    for (size_t i = 0; i < count; ++i) out.emplace_back("\xEF\xBF\xBD");
  }
  bytes.clear();
}

std::string strip_token(const DecoderStep& step, const std::string& token) {
  const std::vector<size_t> lengths = char_lengths(token);
  std::vector<size_t> offsets(lengths.size() + 1, 0);
  for (size_t i = 0; i < lengths.size(); ++i) offsets[i + 1] = offsets[i] + lengths[i];
  const auto char_at = [&](size_t i) {
    return std::string_view(token).substr(offsets[i], lengths[i]);
  };
  size_t first = 0;
  while (first < step.start && first < lengths.size() && char_at(first) == step.text) ++first;
  size_t last = lengths.size();
  for (size_t i = 0; i < step.stop && last > first && char_at(last - 1) == step.text; ++i) --last;
  return token.substr(offsets[first], offsets[last] - offsets[first]);
}

}  // namespace

std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text) {
  std::string out(text);
  for (const NormalizerStep& step : steps) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc:
        out = to_nfc(out);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!out.empty()) out = step.text + out;
        break;
      case NormalizerStep::Kind::kReplace:
        out = replace_all(out, step.text, step.replacement);
        break;
    }
  }
  return out;
}

void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string_view text, bool at_start,
                  std::vector<Piece>& out) {
  std::vector<Piece> pieces;
  if (!text.empty()) pieces.push_back({std::string(text), at_start});
  std::vector<Piece> next;
  std::vector<std::string_view> views;
  for (const PreTokenizerStep& step : steps) {
    next.clear();
    for (const Piece& piece : pieces) {
      if (step.kind == PreTokenizerStep::Kind::kMetaspace) {
        metaspace(step, piece, next);
        continue;
      }
      views.clear();
      if (step.kind == PreTokenizerStep::Kind::kRegexSplit) {
        step.regex->split(piece.text, views);
      } else if (step.kind == PreTokenizerStep::Kind::kDigits) {
        split_digits(piece.text, step.split, views);
      } else {
        views = split_gpt2(piece.text);
      }
      for (std::string_view v : views) {
        next.push_back({std::string(v), piece.at_start && v.data() == piece.text.data()});
      }
    }
    pieces.swap(next);
  }
  for (Piece& p : pieces) out.push_back(std::move(p));
}

std::string decode_tokens(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens,
                          bool lossy) {
  if (steps.empty()) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) out += ' ';
      out += tokens[i];
    }
    return out;
  }
  for (const DecoderStep& step : steps) {
    std::vector<std::string> next;
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel: {
        std::string bytes;
        for (const std::string& t : tokens) bytes += symbols_to_bytes(t).value_or(t);
        next.push_back(lossy ? to_valid_utf8(bytes) : std::move(bytes));
        break;
      }
      case DecoderStep::Kind::kReplace:
        for (const std::string& t : tokens)
          next.push_back(replace_all(t, step.text, step.replacement));
        break;
      case DecoderStep::Kind::kByteFallback: {
        std::string bytes;
        size_t count = 0;
        for (std::string& t : tokens) {
          if (const auto b = byte_token_value(t)) {
            bytes.push_back(char(*b));
            ++count;
            continue;
          }
          flush_bytes(bytes, count, lossy, next);
          count = 0;
          next.push_back(std::move(t));
        }
        flush_bytes(bytes, count, lossy, next);
        break;
      }
      case DecoderStep::Kind::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        next.push_back(std::move(all));
        break;
      }
      case DecoderStep::Kind::kStrip:
        for (const std::string& t : tokens) next.push_back(strip_token(step, t));
        break;
      case DecoderStep::Kind::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          // Hugging Face drops every replacement character of the first token, not just one.
          next.push_back(replace_all(tokens[i], step.text, i == 0 && step.strip_first ? "" : " "));
        }
        break;
    }
    tokens.swap(next);
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace h2oflex::tokenizer
