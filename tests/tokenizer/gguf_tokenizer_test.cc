// A GGUF file's tokenizer documents, written from its metadata, against those tools/gguf_to_hf.py
// wrote for the same file into the SmolLM2 model directory (whose tokenizer is checked against
// Hugging Face's by the corpus tests): the same tokenizer.json, and the same special tokens,
// add_bos_token and chat template in tokenizer_config.json.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "experiments/common/sha256.h"
#include "models/gguf/gguf_spm_tokenizer.h"
#include "models/gguf/gguf_tokenizer.h"
#include "runtime/core/error.h"
#include "tests/loaders/gguf_test_support.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << file << ": run tools/fetch_smollm2.sh (test.sh does)";
  return nlohmann::json::parse(in);
}

TEST(GgufTokenizer, DocumentsEqualTheConvertersForSmolLM2) {
  const GgufFile file = GgufFile::open(H2OFLEX_SMOLLM2_GGUF);
  const fs::path dir = H2OFLEX_SMOLLM2_DIR;
  EXPECT_EQ(gguf_tokenizer_json(file), read_json(dir / "tokenizer.json"));
  const nlohmann::json config = gguf_tokenizer_config_json(file);
  const nlohmann::json converted = read_json(dir / "tokenizer_config.json");
  for (const char* key :
       {"bos_token", "eos_token", "unk_token", "pad_token", "add_bos_token", "chat_template"}) {
    EXPECT_EQ(config.at(key), converted.at(key)) << key;
  }
}

// SentencePiece merges are ranked as transformers' generate_merges ranks them (its output for
// these vocabularies): by the joined token's score, then the longer left part, then the longer
// right part, ties in token order; cuts fall between code points, not bytes.
TEST(GgufTokenizer, SentencePieceMergesAreRankedByScoreThenPartLengths) {
  using Merges = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(sentencepiece_merges({"a", "b", "c", "ab", "bc", "abc"}, {0, 0, 0, -3, -3, -1}),
            (Merges{{"ab", "c"}, {"a", "bc"}, {"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(
      sentencepiece_merges(
          {"\u2581", "h", "\u00e9", "\u2581h", "h\u00e9", "\u2581h\u00e9", "<0x41>"},
          {0, 0, 0, -2, -2, -1, 0}),
      (Merges{{"\u2581h", "\u00e9"}, {"\u2581", "h\u00e9"}, {"\u2581", "h"}, {"h", "\u00e9"}}));
}

// The tokenizer.json written for a SentencePiece vocabulary is the one transformers builds from
// the same file (tools/gen_gguf_fixtures.py records its parts, the merges by count and hash); only
// the model's unknown token differs: transformers leaves it unset, so a byte without a byte
// token would be dropped there and is the unknown token here, as in llama.cpp.
TEST(GgufTokenizer, SentencePieceDocumentEqualsTransformersForTheSameFile) {
  const fs::path fixtures = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/gguf";
  const nlohmann::json doc = gguf_tokenizer_json(GgufFile::open(fixtures / "llama2-spm.gguf"));
  const nlohmann::json want = read_json(fixtures / "llama2-spm-transformers.json");
  for (const char* key : {"added_tokens", "normalizer", "pre_tokenizer", "decoder"}) {
    EXPECT_EQ(doc.at(key), want.at(key)) << key;
  }
  EXPECT_EQ(doc.at("model").at("vocab").size(), want.at("vocab_size").get<size_t>());
  const nlohmann::json& merges = doc.at("model").at("merges");
  EXPECT_EQ(merges.size(), want.at("merges_count").get<size_t>());
  EXPECT_EQ(sha256_hex(merges.dump()), want.at("merges_sha256").get<std::string>());
}

// A SentencePiece vocabulary's documents: a BOS unless the file says otherwise (llama.cpp's and
// transformers' default), and the unknown token as the model's.
TEST(GgufTokenizer, SentencePieceMetadataAddsABosByDefault) {
  const GgufFile file =
      GgufFile::open(fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/gguf/llama2-spm.gguf");
  const nlohmann::json config = gguf_tokenizer_config_json(file);
  EXPECT_EQ(config.at("add_bos_token"), true);
  EXPECT_EQ(config.at("bos_token"), "<s>");
  const nlohmann::json doc = gguf_tokenizer_json(file);
  EXPECT_EQ(doc.at("model").at("unk_token"), "<unk>");
  EXPECT_EQ(doc.at("pre_tokenizer").at("prepend_scheme"), "first");
  const BpeTokenizer tok = load_gguf_tokenizer(file);
  const std::vector<int32_t> ids = tok.encode("hello", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(tok.decode(ids, true), "hello");
}

class GgufTokenizerErrors : public testing_support::ScratchDirTest {
 protected:
  std::string error_of(const testing::GgufBytes& bytes) {
    const fs::path file = dir() / "t.gguf";
    bytes.write(file);
    try {
      load_gguf_tokenizer(GgufFile::open(file));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string q(const std::string& rest) {
    return detail::concat("'", (dir() / "t.gguf").string(), "': ", rest);
  }
};

TEST_F(GgufTokenizerErrors, UnknownModelsAndPreTokenizersAreRefusedNamingTheKey) {
  testing::GgufBytes t5;
  t5.header(3, 0, 1).kv_string("tokenizer.ggml.model", "t5");
  EXPECT_EQ(error_of(t5),
            q("metadata key 'tokenizer.ggml.model' (at byte offset 56, a string) is 't5'; the "
              "tokenizers read from GGUF metadata are byte-level BPE ('gpt2') and SentencePiece "
              "('llama')"));
  testing::GgufBytes qwen2;
  qwen2.header(3, 0, 4).kv_string("tokenizer.ggml.model", "gpt2");
  qwen2.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(1).str("a");
  qwen2.str("tokenizer.ggml.merges").u32(9).u32(8).u64(0);
  qwen2.kv_string("tokenizer.ggml.pre", "qwen2");
  const std::string e = error_of(qwen2);
  EXPECT_NE(e.find("metadata key 'tokenizer.ggml.pre' (at byte offset "), std::string::npos) << e;
  EXPECT_NE(e.find("is 'qwen2'; the pre-tokenizers read are default, gpt-2 and smollm"),
            std::string::npos)
      << e;
}

// A SentencePiece vocabulary: tokens "a" and "b", their scores and types as given.
testing::GgufBytes sentencepiece(uint64_t scores, int32_t second_type, float score = 0,
                                 std::optional<bool> space_prefix = std::nullopt) {
  testing::GgufBytes b;
  b.header(3, 0, space_prefix ? 5 : 4).kv_string("tokenizer.ggml.model", "llama");
  if (space_prefix) {
    const uint8_t flag = *space_prefix ? 1 : 0;
    b.str("tokenizer.ggml.add_space_prefix").u32(7).raw(&flag, 1);
  }
  b.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(2).str("a").str("b");
  b.str("tokenizer.ggml.scores").u32(9).u32(6).u64(scores);
  for (uint64_t i = 0; i < scores; ++i) b.raw(&score, 4);
  b.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(2).u32(1).u32(uint32_t(second_type));
  return b;
}

TEST_F(GgufTokenizerErrors, SentencePieceScoresAndTypesThatDoNotFitAreRefusedNamingTheKey) {
  std::string e = error_of(sentencepiece(1, 1));
  EXPECT_NE(e.find("metadata key 'tokenizer.ggml.scores' (at byte offset "), std::string::npos)
      << e;
  EXPECT_NE(e.find("has 1 entries for 2 tokens"), std::string::npos) << e;
  e = error_of(sentencepiece(2, 7));
  EXPECT_NE(e.find("metadata key 'tokenizer.ggml.token_type' (at byte offset "), std::string::npos)
      << e;
  EXPECT_NE(e.find("gives token 1 ('b') type 7; a SentencePiece vocabulary's tokens are normal"),
            std::string::npos)
      << e;
  e = error_of(sentencepiece(2, 1, std::nanf("")));
  EXPECT_NE(e.find("metadata key 'tokenizer.ggml.scores' (at byte offset "), std::string::npos)
      << e;
  EXPECT_NE(e.find("gives token 0 ('a') the score nan; scores must be finite"), std::string::npos)
      << e;
  EXPECT_EQ(error_of(sentencepiece(2, 6)), "") << "a byte token is read";
}

// `tokenizer.ggml.add_space_prefix` false: no "▁" before the text, and none stripped on decode.
class GgufSentencePieceFile : public testing_support::ScratchDirTest {};

TEST_F(GgufSentencePieceFile, WithoutASpacePrefixNoneIsAddedOrStripped) {
  for (const bool prefix : {true, false}) {
    const fs::path file = dir() / "t.gguf";
    sentencepiece(2, 1, 0, prefix).write(file);
    const nlohmann::json doc = gguf_tokenizer_json(GgufFile::open(file));
    EXPECT_EQ(doc.at("pre_tokenizer").at("prepend_scheme"), prefix ? "first" : "never");
    EXPECT_EQ(doc.at("decoder").at("decoders").size(), prefix ? 4u : 3u);
  }
}

TEST_F(GgufTokenizerErrors, AFileWithoutTokenizerMetadataIsRefusedNamingTheKey) {
  testing::GgufBytes none;
  none.header(3, 0, 0);
  EXPECT_EQ(error_of(none), q("metadata key 'tokenizer.ggml.model' is missing"));
}

}  // namespace
}  // namespace h2oflex
