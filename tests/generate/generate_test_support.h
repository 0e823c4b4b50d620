// Helpers for the generate tests: a scratch directory per test, file helpers, the demo model's
// paths and a fake block runner whose output is a pure function of each prompt.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/generate/generate_job.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "tests/support/json_lines.h"

#include "tests/support/scratch_dir.h"

namespace h2oflex::testing {

namespace fs = std::filesystem;

inline fs::path demo_model_dir() {
  return fs::path(H2OFLEX_SOURCE_DIR) / "models/demo/opt-demo";
}

inline const BpeTokenizer& demo_tokenizer() {
  static const BpeTokenizer tok = BpeTokenizer::load(demo_model_dir());
  return tok;
}

inline void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << file;
}

inline std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using testing_support::read_jsonl;

using GenerateScratchTest = testing_support::ScratchDirTest;

// Tokens a fake engine "generates" for a prompt: a pure function of the prompt's ids (never of
// the block it is in), ids from the ordinary vocabulary, EOS after `eos_after` tokens when >= 0.
inline std::vector<int32_t> fake_generation(const std::vector<int32_t>& prompt, int gen_len,
                                            int eos_after = -1) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t id : prompt) h = (h ^ static_cast<uint64_t>(id)) * 1099511628211ull;
  std::vector<int32_t> out;
  for (int k = 0; k < gen_len; ++k) {
    if (k == eos_after) {
      out.push_back(2);
      break;
    }
    out.push_back(4 + static_cast<int32_t>((h >> 7) % 4000));
    h = h * 6364136223846793005ull + 1442695040888963407ull;
  }
  return out;
}

}  // namespace h2oflex::testing
