// The tokenizer against Hugging Face reference ids (tests/fixtures/tokenizer/expected.jsonl,
// written by tools/gen_tokenizer_fixtures.py).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex {
namespace {

const std::filesystem::path kFixtureDir =
    std::filesystem::path(H2OFLEX_SOURCE_DIR) / "tests" / "fixtures" / "tokenizer";
const std::filesystem::path kDemoDir =
    std::filesystem::path(H2OFLEX_SOURCE_DIR) / "models" / "demo" / "opt-demo";

std::vector<nlohmann::json> read_records(const std::string& kind) {
  std::ifstream in(kFixtureDir / "expected.jsonl");
  EXPECT_TRUE(in.is_open());
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json rec = nlohmann::json::parse(line);
    if (rec["kind"] == kind) out.push_back(std::move(rec));
  }
  return out;
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TokenizerFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    from_json_ =
        new BpeTokenizer(BpeTokenizer::load_tokenizer_json(kFixtureDir / "tokenizer.json"));
    from_vocab_ = new BpeTokenizer(
        BpeTokenizer::load_vocab_merges(kFixtureDir / "vocab.json", kFixtureDir / "merges.txt"));
  }
  static void TearDownTestSuite() {
    delete from_json_;
    delete from_vocab_;
  }
  static BpeTokenizer* from_json_;
  static BpeTokenizer* from_vocab_;
};
BpeTokenizer* TokenizerFixture::from_json_ = nullptr;
BpeTokenizer* TokenizerFixture::from_vocab_ = nullptr;

TEST_F(TokenizerFixture, OptConventions) {
  for (const BpeTokenizer* tok : {from_json_, from_vocab_}) {
    EXPECT_EQ(tok->bos_id(), 2);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->pad_id(), 1);
    EXPECT_EQ(tok->vocab_size(), 4096u);
    EXPECT_EQ(tok->token_to_id("<s>"), 0);
    EXPECT_EQ(tok->token_to_id("<unk>"), 3);
    EXPECT_TRUE(tok->is_special(1));
    EXPECT_TRUE(tok->is_special(2));
    EXPECT_FALSE(tok->is_special(0));  // OPT registers only <pad> and </s> as special
    EXPECT_FALSE(tok->is_special(3));
  }
}

TEST_F(TokenizerFixture, EncodeMatchesReferenceOnEveryLine) {
  const auto records = read_records("encode");
  ASSERT_GE(records.size(), 2000u);
  size_t mismatches = 0;
  for (const auto& rec : records) {
    const std::string text = rec["text"];
    const std::vector<int32_t> want = rec["ids"];
    for (const BpeTokenizer* tok : {from_json_, from_vocab_}) {
      const std::vector<int32_t> got = tok->encode(text);
      if (got != want && ++mismatches <= 10) {
        ADD_FAILURE() << "text " << nlohmann::json(text).dump() << "\n  want "
                      << nlohmann::json(want).dump() << "\n  got  " << nlohmann::json(got).dump();
      }
    }
    // Without BOS: the same ids minus the first.
    EXPECT_EQ(from_json_->encode(text, /*add_bos=*/false),
              std::vector<int32_t>(want.begin() + 1, want.end()));
  }
  EXPECT_EQ(mismatches, 0u) << "of " << records.size() << " lines x 2 loaders";
}

TEST_F(TokenizerFixture, DecodeRoundTripsEveryLine) {
  const auto records = read_records("encode");
  for (const auto& rec : records) {
    const std::string text = rec["text"];
    const std::vector<int32_t> ids = rec["ids"];
    // Skipping special tokens drops BOS and any "</s>" / "<pad>" written in the text.
    const std::string skipped = rec.contains("decoded") ? rec["decoded"] : rec["text"];
    EXPECT_EQ(from_json_->decode(ids), skipped);
    EXPECT_EQ(from_vocab_->decode(ids), skipped);
    // Keeping them, the text comes back exactly after the BOS.
    EXPECT_EQ(from_json_->decode(from_json_->encode(text, false), false), text);
    EXPECT_EQ(from_json_->decode_bytes(from_json_->encode(text), false), "</s>" + text);
  }
}

TEST_F(TokenizerFixture, DecodeMatchesReferenceOnArbitraryIds) {
  const auto records = read_records("decode");
  ASSERT_GE(records.size(), 100u);
  for (const auto& rec : records) {
    const std::vector<int32_t> ids = rec["ids"];
    const bool skip = rec["skip_special"];
    EXPECT_EQ(from_json_->decode(ids, skip), rec["text"].get<std::string>())
        << nlohmann::json(ids).dump() << " skip_special=" << skip;
  }
}

TEST_F(TokenizerFixture, InvalidUtf8IsEncodedByteForByte) {
  const auto records = read_records("encode_bytes");
  ASSERT_GE(records.size(), 20u);
  for (const auto& rec : records) {
    const std::string raw = from_hex(rec["hex"]);
    const std::vector<int32_t> want = rec["ids"];
    const std::vector<int32_t> ids = from_json_->encode(raw);
    EXPECT_EQ(ids, want) << "hex " << rec["hex"];
    EXPECT_EQ(from_json_->decode_bytes(ids), raw) << "hex " << rec["hex"];
    EXPECT_EQ(from_json_->decode(ids), rec["lossy"].get<std::string>()) << "hex " << rec["hex"];
  }
}

TEST_F(TokenizerFixture, DemoModelShipsTheTestedTokenizer) {
  for (const char* name : {"vocab.json", "merges.txt", "tokenizer.json"}) {
    EXPECT_EQ(file_bytes(kDemoDir / name), file_bytes(kFixtureDir / name)) << name;
  }
  const BpeTokenizer demo = BpeTokenizer::load(kDemoDir);
  EXPECT_EQ(demo.encode("Hello, world!"), from_json_->encode("Hello, world!"));
}

TEST_F(TokenizerFixture, LongPiecesAndRepeatsAreStable) {
  // Long single pieces bypass the cache; repeated calls hit it. Both must give the same ids,
  // and the ids must decode back to the input.
  std::string long_word(5000, 'a');
  std::string long_mixed;
  for (int i = 0; i < 2000; ++i) long_mixed += "ab";
  for (const std::string& text : {long_word, long_mixed, std::string(3000, ' ') + "x"}) {
    const auto first = from_json_->encode(text);
    EXPECT_EQ(from_json_->encode(text), first);
    EXPECT_EQ(from_json_->decode(first), text);
  }
}

TEST_F(TokenizerFixture, ConcurrentEncodesAgree) {
  // encode() shares one piece cache between threads; a fresh tokenizer starts it empty.
  const BpeTokenizer tok = BpeTokenizer::load_tokenizer_json(kFixtureDir / "tokenizer.json");
  const auto records = read_records("encode");
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < records.size() + t; ++i) {
        const auto& rec = records[i % records.size()];
        if (tok.encode(rec["text"].get<std::string>()) != rec["ids"].get<std::vector<int32_t>>()) {
          ++bad[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace h2oflex
