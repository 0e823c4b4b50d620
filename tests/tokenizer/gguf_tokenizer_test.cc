// A GGUF file's tokenizer documents, written from its metadata, against those tools/gguf_to_hf.py
// wrote for the same file into the SmolLM2 model directory (whose tokenizer is checked against
// Hugging Face's by the corpus tests): the same tokenizer.json, and the same special tokens,
// add_bos_token and chat template in tokenizer_config.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

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

TEST_F(GgufTokenizerErrors, SentencePieceAndUnknownPreTokenizersAreRefusedNamingTheKey) {
  testing::GgufBytes llama;
  llama.header(3, 0, 1).kv_string("tokenizer.ggml.model", "llama");
  EXPECT_EQ(error_of(llama),
            q("metadata key 'tokenizer.ggml.model' (at byte offset 56, a string) is 'llama'; only "
              "byte-level BPE ('gpt2') is read from GGUF metadata (for a SentencePiece 'llama' "
              "tokenizer, give the model's Hugging Face directory)"));
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

TEST_F(GgufTokenizerErrors, AFileWithoutTokenizerMetadataIsRefusedNamingTheKey) {
  testing::GgufBytes none;
  none.header(3, 0, 0);
  EXPECT_EQ(error_of(none), q("metadata key 'tokenizer.ggml.model' is missing"));
}

}  // namespace
}  // namespace h2oflex
