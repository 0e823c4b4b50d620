// load_tokenizer(): what the model directory's files can say, and the InputError (naming file and
// key) for what they cannot.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(H2OFLEX_SOURCE_DIR) / "tests" / "fixtures";

// A scratch model directory holding a copy of one fixture kind's files.
class ModelDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("h2oflex_family_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Copies the kind's files except expected.jsonl; returns its tokenizer.json.
  json copy_kind(const std::string& kind) {
    for (const auto& entry : fs::directory_iterator(kFixtures / ("tokenizer-" + kind))) {
      if (entry.path().filename() != "expected.jsonl") {
        fs::copy_file(entry.path(), dir_ / entry.path().filename());
      }
    }
    return read("tokenizer.json");
  }
  json read(const std::string& name) {
    std::ifstream in(dir_ / name);
    return json::parse(in);
  }
  void write(const std::string& name, const json& j) {
    std::ofstream(dir_ / name, std::ios::binary) << j.dump();
  }
  void write_text(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  // load_tokenizer(dir_) must throw InputError containing every part.
  void expect_error(std::initializer_list<std::string> parts) {
    try {
      load_tokenizer(dir_);
      ADD_FAILURE() << "no exception";
    } catch (const InputError& e) {
      for (const std::string& part : parts) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
            << "message '" << e.what() << "' lacks '" << part << "'";
      }
    }
  }

  fs::path dir_;
};

TEST_F(ModelDir, SplitPatternThatPcre2CannotCompile) {
  json j = copy_kind("llama3");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed|\\p{L}";
  write("tokenizer.json", j);
  expect_error(
      {"tokenizer.json", "pre_tokenizer.pretokenizers[0].pattern.Regex", "PCRE2", "(unclosed"});
  // \S has no White_Space rewrite inside a character class.
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "[\\S\\d]+";
  write("tokenizer.json", j);
  expect_error({"tokenizer.json", "pre_tokenizer.pretokenizers[0].pattern.Regex",
                "\\S inside a character class"});
}

TEST_F(ModelDir, TheSplitPatternComesFromTheFile) {
  // A different pattern gives different pieces, so different ids: nothing is hard-coded.
  json j = copy_kind("llama3");
  const BpeTokenizer as_shipped = load_tokenizer(dir_);
  const size_t the = as_shipped.encode("the", false).size();
  ASSERT_LT(the, 3u);
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = ".";
  write("tokenizer.json", j);
  EXPECT_EQ(load_tokenizer(dir_).encode("the", false).size(), 3u);  // one piece per character
  // A {"String": ...} pattern is a literal, even when it looks like a regex.
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"String", "."}};
  write("tokenizer.json", j);
  const BpeTokenizer literal = load_tokenizer(dir_);
  EXPECT_EQ(literal.encode("the", false).size(), the);
  EXPECT_EQ(literal.encode("the.the", false).size(), 2 * the + 1);
}

TEST_F(ModelDir, UnknownStagesAndSettingsNameTheirKey) {
  const json original = copy_kind("neox");
  const auto with = [&](const std::string& pointer, const json& value) {
    json j = original;
    j[json::json_pointer(pointer)] = value;
    write("tokenizer.json", j);
  };
  with("/normalizer", {{"type", "NFKC"}});
  expect_error({"tokenizer.json", "normalizer.type", "'NFKC'"});
  with(
      "/normalizer",
      {{"type", "Sequence"},
       {"normalizers",
        json::array({{{"type", "NFC"}},
                     {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}})}});
  expect_error({"tokenizer.json", "normalizer.normalizers[1].pattern", "String"});
  with("/pre_tokenizer", {{"type", "Whitespace"}});
  expect_error({"tokenizer.json", "pre_tokenizer.type", "'Whitespace'"});
  with("/pre_tokenizer/add_prefix_space", true);
  expect_error({"tokenizer.json", "pre_tokenizer.add_prefix_space"});
  with("/pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "ByteLevel"}},
              {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Isolated"}}})}});
  expect_error({"tokenizer.json", "pre_tokenizer.pretokenizers[1]", "ByteLevel must come last"});
  with("/pre_tokenizer", {{"type", "Split"},
                          {"pattern", {{"String", " "}}},
                          {"behavior", "Removed"},
                          {"invert", false}});
  expect_error({"tokenizer.json", "pre_tokenizer.behavior", "Isolated"});
  with("/pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "ab"}});
  expect_error({"tokenizer.json", "pre_tokenizer.replacement", "single character"});
  with("/model/type", "WordPiece");
  expect_error({"tokenizer.json", "model.type", "WordPiece"});
  with("/model/dropout", 0.1);
  expect_error({"tokenizer.json", "model.dropout"});
  with("/model/unk_token", "<nope>");
  expect_error({"tokenizer.json", "model.unk_token", "<nope>"});
  with("/decoder", {{"type", "WordPiece"}});
  expect_error({"tokenizer.json", "decoder.type", "'WordPiece'"});
  with("/post_processor", {{"type", "RobertaProcessing"}});
  expect_error({"tokenizer.json", "post_processor.type", "'RobertaProcessing'"});
  with("/truncation", {{"max_length", 8}});
  expect_error({"tokenizer.json", "truncation"});
  with("/added_tokens/0/lstrip", "yes");
  expect_error({"tokenizer.json", "added_tokens[0].lstrip", "true or false"});
}

TEST_F(ModelDir, TemplatesAndTheirTokens) {
  json j = copy_kind("llama2");
  json& single = j["post_processor"]["single"];
  single.insert(single.begin(), single[0]);  // <s> <s> $A
  write("tokenizer.json", j);
  expect_error({"tokenizer.json", "post_processor.single", "more than one token"});
  j = read("tokenizer.json");
  j["post_processor"]["single"].erase(0);
  j["post_processor"]["single"][0]["SpecialToken"]["id"] = "<bos>";  // <bos> $A
  write("tokenizer.json", j);
  expect_error({"tokenizer.json", "post_processor.special_tokens.<bos>", "lacks it"});
}

TEST_F(ModelDir, TokenizerConfigDecidesBosAndEos) {
  copy_kind("llama2");
  json config = read("tokenizer_config.json");
  config["add_bos_token"] = false;
  config["add_eos_token"] = true;
  write("tokenizer_config.json", config);
  const BpeTokenizer tok = load_tokenizer(dir_);
  EXPECT_EQ(tok.bos_to_prepend(), std::nullopt);
  EXPECT_EQ(tok.eos_to_append(), 2);
  EXPECT_EQ(tok.bos_id(), 1);
  const std::vector<int32_t> ids = tok.encode("hi");
  EXPECT_EQ(ids.back(), 2);
  EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.end() - 1), tok.encode("hi", false));

  config["eos_token"] = {{"content", "<unk>"}, {"special", true}};  // the object spelling
  write("tokenizer_config.json", config);
  EXPECT_EQ(load_tokenizer(dir_).eos_id(), 0);
  config["eos_token"] = "<|missing|>";
  write("tokenizer_config.json", config);
  expect_error({"tokenizer_config.json", "eos_token", "<|missing|>"});
  config["eos_token"] = 7;
  write("tokenizer_config.json", config);
  expect_error({"tokenizer_config.json", "eos_token", "expected a token string"});
  config["eos_token"] = "</s>";
  config["bos_token"] = nullptr;
  config["add_bos_token"] = true;
  write("tokenizer_config.json", config);
  expect_error({"tokenizer_config.json", "add_bos_token", "no bos_token"});
  config["add_bos_token"] = "sometimes";
  write("tokenizer_config.json", config);
  expect_error({"tokenizer_config.json", "add_bos_token", "true or false"});
}

TEST_F(ModelDir, StopIdsFromGenerationConfig) {
  copy_kind("llama2");
  write("generation_config.json", {{"eos_token_id", 5}});
  EXPECT_EQ(load_tokenizer(dir_).stop_ids(), (std::vector<int32_t>{2, 5}));
  write("generation_config.json", {{"eos_token_id", {7, 2, 7}}});
  EXPECT_EQ(load_tokenizer(dir_).stop_ids(), (std::vector<int32_t>{2, 7}));
  write("generation_config.json", {{"eos_token_id", "</s>"}});
  expect_error({"generation_config.json", "eos_token_id", "token id"});
  write("generation_config.json", {{"eos_token_id", {1, -3}}});
  expect_error({"generation_config.json", "eos_token_id[1]"});
  // Without tokenizer_config.json, EOS falls back to generation_config.json's first id.
  fs::remove(dir_ / "tokenizer_config.json");
  write("generation_config.json", {{"eos_token_id", {9, 2}}});
  EXPECT_EQ(load_tokenizer(dir_).eos_id(), 9);
}

TEST_F(ModelDir, WhichFilesAreRead) {
  expect_error({"no tokenizer.json"});
  write_text("tokenizer.model", "\x0a\x03<s>");
  expect_error({"tokenizer.model", "convert it to tokenizer.json"});
  write_text("tokenizer.json", "{broken");
  expect_error({"tokenizer.json", "malformed JSON"});
  try {
    load_tokenizer(dir_ / "missing");
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos) << e.what();
  }
}

TEST_F(ModelDir, TheGpt2LoaderRefusesOtherKinds) {
  copy_kind("llama3");
  try {
    BpeTokenizer::load_tokenizer_json(dir_ / "tokenizer.json");
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("pre_tokenizer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("load_tokenizer()"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace h2oflex
