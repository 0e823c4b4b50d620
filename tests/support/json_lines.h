// JSONL in the tests: the lines a command printed, or a file's, each parsed; a line that does not
// parse fails the test (and is left out).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace h2oflex::testing_support {

inline std::vector<nlohmann::json> parse_jsonl(const std::string& text,
                                               const std::string& where = "output") {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << where << ": bad line '" << line << "'";
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << file;
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_jsonl(ss.str(), file.string());
}

}  // namespace h2oflex::testing_support
