// GPT-2's reversible mapping between bytes and printable code points.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace h2oflex::tokenizer {

// GPT-2 stores tokens as text in which every byte is one printable character: the printable
// Latin-1 bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves and the other 68
// bytes are shifted to U+0100, U+0101, ... in byte order (so the space 0x20 becomes 'Ġ' U+0120).
char32_t byte_to_code_point(uint8_t byte);

// Inverse of byte_to_code_point; nullopt for code points that stand for no byte.
std::optional<uint8_t> code_point_to_byte(char32_t cp);

// The vocabulary spelling of a byte string: each byte mapped and UTF-8 encoded.
std::string bytes_to_symbols(std::string_view bytes);

// The bytes a vocabulary token stands for, or nullopt when some character of the token is not a
// byte symbol (special tokens such as "<pad>" are all ASCII and do map; others may not).
std::optional<std::string> symbols_to_bytes(std::string_view token);

}  // namespace h2oflex::tokenizer
