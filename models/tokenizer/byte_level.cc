#include "models/tokenizer/byte_level.h"

#include "models/tokenizer/utf8.h"

namespace h2oflex::tokenizer {
namespace {

bool is_printable_latin1(uint8_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

struct Tables {
  std::array<char32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // every mapped code point is below U+0100 + 68

  Tables() {
    to_byte.fill(-1);
    char32_t next_shifted = 0x100;
    for (int b = 0; b < 256; ++b) {
      const auto byte = static_cast<uint8_t>(b);
      to_cp[b] = is_printable_latin1(byte) ? char32_t(b) : next_shifted++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_code_point(uint8_t byte) {
  return tables().to_cp[byte];
}

std::optional<uint8_t> code_point_to_byte(char32_t cp) {
  if (cp >= tables().to_byte.size() || tables().to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(tables().to_byte[cp]);
}

std::string bytes_to_symbols(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_code_point(static_cast<uint8_t>(c)));
  return out;
}

std::optional<std::string> symbols_to_bytes(std::string_view token) {
  std::string out;
  size_t pos = 0;
  while (pos < token.size()) {
    const Utf8Step step = decode_utf8_at(token, pos);
    if (!step.valid) return std::nullopt;
    const std::optional<uint8_t> byte = code_point_to_byte(step.code_point);
    if (!byte) return std::nullopt;
    out.push_back(static_cast<char>(*byte));
    pos += step.length;
  }
  return out;
}

}  // namespace h2oflex::tokenizer
