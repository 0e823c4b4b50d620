// Loading: both merge spellings in tokenizer.json, and bad files reported as InputError.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtureDir = fs::path(H2OFLEX_SOURCE_DIR) / "tests" / "fixtures" / "tokenizer";

class TokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("h2oflex_tok_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ifstream in(kFixtureDir / "tokenizer.json");
    root_ = nlohmann::json::parse(in);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  fs::path write_json(const nlohmann::json& j) { return write("tokenizer.json", j.dump()); }
  static std::string vocab_text() {
    std::ifstream in(kFixtureDir / "vocab.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
  nlohmann::json root_;
};

// Expects InputError whose message contains every one of `parts`.
template <typename F>
void expect_input_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message '" << e.what() << "' lacks '" << part << "'";
    }
  }
}

TEST_F(TokenizerFiles, MergesAsStringsOrPairsGiveTheSameIds) {
  ASSERT_TRUE(root_["model"]["merges"][0].is_array());  // the fixture uses pairs
  const BpeTokenizer pairs = BpeTokenizer::load_tokenizer_json(kFixtureDir / "tokenizer.json");
  for (auto& m : root_["model"]["merges"]) {
    m = m[0].get<std::string>() + " " + m[1].get<std::string>();
  }
  const BpeTokenizer strings = BpeTokenizer::load_tokenizer_json(write_json(root_));
  for (const char* text :
       {"Hello there, it's 2024!", "  Привет 👍🏽 中文\n\n", "x</s>y<pad>"}) {
    EXPECT_EQ(strings.encode(text), pairs.encode(text)) << text;
  }
}

TEST_F(TokenizerFiles, LoadPrefersTokenizerJsonAndFallsBackToVocabMerges) {
  write("vocab.json", vocab_text());
  fs::copy_file(kFixtureDir / "merges.txt", dir_ / "merges.txt");
  const BpeTokenizer from_dir = BpeTokenizer::load(dir_);  // no tokenizer.json yet
  const BpeTokenizer ref = BpeTokenizer::load_tokenizer_json(kFixtureDir / "tokenizer.json");
  EXPECT_EQ(from_dir.encode("a merge-heavy sentence"), ref.encode("a merge-heavy sentence"));
  write("tokenizer.json", "{broken");
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {"tokenizer.json", "malformed JSON"});
}

TEST_F(TokenizerFiles, MissingFiles) {
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {"vocab.json", "cannot open"});
  write("vocab.json", vocab_text());
  expect_input_error([&] { BpeTokenizer::load(dir_); }, {"merges.txt", "cannot open"});
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(dir_ / "nope.json"); },
                     {"nope.json", "cannot open"});
}

TEST_F(TokenizerFiles, MalformedJson) {
  const fs::path vocab = write("vocab.json", "{\"a\": 1,");
  const fs::path merges = write("merges.txt", "#version: 0.2\n");
  expect_input_error([&] { BpeTokenizer::load_vocab_merges(vocab, merges); },
                     {"vocab.json", "malformed JSON"});
  write("vocab.json", "[1, 2]");
  expect_input_error([&] { BpeTokenizer::load_vocab_merges(vocab, merges); },
                     {"vocab.json", "JSON object"});
  write("vocab.json", "{\"a\": \"x\"}");
  expect_input_error([&] { BpeTokenizer::load_vocab_merges(vocab, merges); },
                     {"vocab.json", "'a'", "not an integer"});
}

TEST_F(TokenizerFiles, BadMergeLines) {
  const fs::path vocab = write("vocab.json", vocab_text());
  const fs::path merges = write("merges.txt", "#version: 0.2\ne r\nq\u00A7zz x\n");
  expect_input_error([&] { BpeTokenizer::load_vocab_merges(vocab, merges); },
                     {"merges.txt line 3", "unknown token"});
  write("merges.txt", "e r\nonlyone\n");
  expect_input_error([&] { BpeTokenizer::load_vocab_merges(vocab, merges); },
                     {"merges.txt line 2", "two tokens"});
  // Both halves known, but their concatenation is not a token.
  write("merges.txt", "e r\nr \xC4\xA0\n");
  expect_input_error([&] { BpeTokenizer::load_vocab_merges(vocab, merges); },
                     {"merges.txt line 2", "merged token"});
}

// Garbage merges.txt: terminal escape sequences are escaped in the message, a long line is cut.
TEST_F(TokenizerFiles, GarbageMergeLineIsQuotedNotEchoed) {
  const fs::path vocab = write("vocab.json", vocab_text());
  const fs::path merges =
      write("merges.txt", "e r\n\x1b]0;pwned\x07" + std::string(5000, 'z') + "\n");
  try {
    BpeTokenizer::load_vocab_merges(vocab, merges);
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\x07'), std::string::npos) << msg;
    EXPECT_NE(msg.find("\\x1b]0;pwned\\x07"), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 400u) << msg;
  }
}

TEST_F(TokenizerFiles, BadTokenizerJson) {
  nlohmann::json j = root_;
  j["model"]["merges"][5] = nlohmann::json::array({"e", "unknown-token"});
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"tokenizer.json", "model.merges[5]", "unknown token 'unknown-token'"});
  j = root_;
  j["model"]["merges"][7] = 42;
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"model.merges[7]"});
  j = root_;
  j["normalizer"] = {{"type", "NFC"}};
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"tokenizer.json", "normalizer"});
  j = root_;
  j["pre_tokenizer"]["add_prefix_space"] = true;
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"add_prefix_space"});
  j = root_;
  j["model"].erase("vocab");
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"tokenizer.json", "model.vocab"});
  j = root_;
  j["added_tokens"][0]["id"] = 7;  // "<pad>" is id 1 in the vocabulary
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"added token '<pad>'", "id 7"});
}

TEST_F(TokenizerFiles, VocabularyMustHoldItsMergesAndOptTokens) {
  nlohmann::json j = root_;
  j["model"]["vocab"].erase("\xC4\xA0");  // 'Ġ', the space byte, which merges use
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"tokenizer.json", "model.merges[", "unknown token '\xC4\xA0'"});
  // A byte token no merge uses may be missing (as in SmolLM2's vocabulary): that byte is
  // dropped, and counted.
  j = root_;
  j["model"]["vocab"].erase("\xC4\x84");  // 'Ą', byte 4
  const BpeTokenizer tok = BpeTokenizer::load_tokenizer_json(write_json(j));
  size_t dropped = 0;
  EXPECT_EQ(tok.encode("a\x04", false, &dropped), tok.encode("a", false));
  EXPECT_EQ(dropped, 1u);
  j = root_;
  j["model"]["vocab"].erase("</s>");
  j["added_tokens"] = nlohmann::json::array();
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"tokenizer.json", "'</s>'"});
  j = root_;
  j["model"]["vocab"]["duplicate"] = 5;
  expect_input_error([&] { BpeTokenizer::load_tokenizer_json(write_json(j)); },
                     {"id 5 is used by both"});
}

TEST_F(TokenizerFiles, OutOfRangeIdsAreIgnoredByDecode) {
  const BpeTokenizer tok = BpeTokenizer::load_tokenizer_json(kFixtureDir / "tokenizer.json");
  const std::vector<int32_t> ids = {-1, tok.token_to_id("hi").value_or(0), 4096, 1 << 30};
  EXPECT_EQ(tok.decode(ids), tok.decode(std::vector<int32_t>{ids[1]}));
}

}  // namespace
}  // namespace h2oflex
