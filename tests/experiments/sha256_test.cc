// experiments/common/sha256.cc against FIPS 180-4's example vectors and against Python's hashlib
// for byte strings of every padding case (tests/fixtures/sha256/random.json,
// tools/gen_sha256_fixtures.py).
#include "experiments/common/sha256.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace h2oflex {
namespace {

TEST(Sha256, FipsExampleVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklm"
                 "nopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

TEST(Sha256, MatchesHashlibForEveryPaddingCase) {
  std::ifstream in(std::string(H2OFLEX_SOURCE_DIR) + "/tests/fixtures/sha256/random.json");
  ASSERT_TRUE(in) << "tests/fixtures/sha256/random.json";
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["cases"].size(), 40u);
  for (const auto& c : j["cases"]) {
    const std::string data = from_hex(c["hex"].get<std::string>());
    EXPECT_EQ(sha256_hex(data), c["sha256"].get<std::string>()) << data.size() << " bytes";
  }
}

}  // namespace
}  // namespace h2oflex
