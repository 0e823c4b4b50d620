// tests/fixtures/gguf/blocks.json (tools/gen_gguf_fixtures.py): random blocks of every GGUF type
// with the values and bytes the `gguf` package gives for them, hex-encoded.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace h2oflex::testing_support {

inline std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

// Little-endian f32 values written as hex (the fixture keeps them bit for bit).
inline std::vector<float> floats_from_hex(const std::string& hex) {
  const std::vector<uint8_t> bytes = from_hex(hex);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

inline const nlohmann::json& gguf_block_fixture() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(H2OFLEX_SOURCE_DIR) + "/tests/fixtures/gguf/blocks.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

}  // namespace h2oflex::testing_support
