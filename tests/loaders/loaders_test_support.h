// Helpers for the loader tests: a scratch directory per test and a minimal safetensors writer
// (written from the format's description, independent of the reader under test).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/scratch_dir.h"

namespace h2oflex::testing {

namespace fs = std::filesystem;

inline fs::path fixture_dir() {
  return fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt";
}

inline nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << "cannot open " << file;
  return nlohmann::json::parse(in);
}

using ScratchDirTest = testing_support::ScratchDirTest;

struct RawTensor {
  std::string name;
  std::string dtype;  // as the format spells it: "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

template <typename T>
std::vector<unsigned char> as_bytes(const std::vector<T>& values) {
  std::vector<unsigned char> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// Writes: u64 little-endian header length, the JSON header (space-padded to 8 bytes), the data.
inline void write_raw_safetensors(const fs::path& file, const std::string& header,
                                  const std::vector<unsigned char>& data) {
  std::string padded = header;
  while (padded.size() % 8 != 0) padded.push_back(' ');
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  uint64_t n = padded.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(padded.data(), static_cast<std::streamsize>(padded.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << "writing " << file;
}

inline void write_safetensors(const fs::path& file, const std::vector<RawTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<unsigned char> data;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  write_raw_safetensors(file, header.dump(), data);
}

// An exception's message must mention `needle`.
#define EXPECT_THROW_WITH(statement, exception, needle)                            \
  do {                                                                             \
    try {                                                                          \
      statement;                                                                   \
      ADD_FAILURE() << "expected " #exception " mentioning '" << (needle) << "'";  \
    } catch (const exception& e) {                                                 \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)             \
          << "message '" << e.what() << "' does not mention '" << (needle) << "'"; \
    }                                                                              \
  } while (0)

}  // namespace h2oflex::testing
