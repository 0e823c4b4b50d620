// A slice of the tokenizer corpus (tools/gen_tokenizer_corpus.py: prose in many scripts, code,
// numbers, emoji, control characters, long runs of spaces and newlines) through
// `h2oflex tokenize`, for every tokenizer kind: ids, dropped bytes and decoded text as Hugging
// Face `tokenizers` gives them (tests/fixtures/tokenizer-corpus/, written by
// tools/compare_tokenizer_corpus.py, which also runs the whole corpus; llama2-gguf.jsonl by
// tools/gen_gguf_fixtures.py, from transformers' tokenizer of a GGUF file). SmolLM2's tokenizer is
// too large to commit: it is read from the model directory tools/fetch_smollm2.sh makes.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/json_lines.h"
#include "tests/support/run_binary.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = H2OFLEX_SOURCE_DIR;
const fs::path kSlice = kSource / "tests/fixtures/tokenizer-corpus";

// The SmolLM2 directory, as tools/fetch_smollm2.sh --print-dir names it (tests/CMakeLists.txt).
std::string smollm2_dir() {
  return H2OFLEX_SMOLLM2_DIR;
}

struct Kind {
  const char* name;     // the slice file's name
  const char* fixture;  // the tokenizer's fixture directory; nullptr: SmolLM2's model directory
  bool gguf = false;    // a GGUF file instead (its tokenizer from the metadata): `fixture` under
                        // tests/fixtures, or SmolLM2's when nullptr
};

void PrintTo(const Kind& kind, std::ostream* os) {
  *os << kind.name << (kind.gguf ? " (GGUF)" : "");
}

class CorpusSlice : public testing_support::ScratchDirTest,
                    public ::testing::WithParamInterface<Kind> {};

TEST_P(CorpusSlice, IdsDroppedBytesAndDecodeMatchTheReference) {
  const Kind kind = GetParam();
  const std::string model = kind.fixture ? (kSource / "tests/fixtures" / kind.fixture).string()
                            : kind.gguf  ? std::string(H2OFLEX_SMOLLM2_GGUF)
                                         : smollm2_dir();
  ASSERT_TRUE(fs::exists(kind.gguf ? fs::path(model) : fs::path(model) / "tokenizer.json"))
      << model << " has no tokenizer.json: run tools/fetch_smollm2.sh (it makes the SmolLM2 "
      << "model directory)";
  const fs::path corpus = kSlice / "corpus.jsonl";
  const std::vector<json> texts = testing_support::read_jsonl(corpus);
  const std::vector<json> want =
      testing_support::read_jsonl(kSlice / (std::string(kind.name) + ".jsonl"));
  ASSERT_EQ(texts.size(), want.size());
  ASSERT_GE(texts.size(), 300u);

  const auto enc = testing_support::run_h2oflex_split(
      "tokenize --no-special --model " + model + " --input " + corpus.string(), dir().string());
  ASSERT_EQ(enc.exit_code, 0) << enc.errors;
  const std::vector<json> got = testing_support::parse_jsonl(enc.output);
  ASSERT_EQ(got.size(), want.size());
  size_t differing = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool same = got[i]["ids"] == want[i]["ids"] &&
                      got[i].value("dropped_bytes", 0) == want[i].value("dropped_bytes", 0);
    if (!same && ++differing <= 5) {
      ADD_FAILURE() << kind.name << " line " << i + 1 << " " << texts[i]["text"].dump()
                    << "\n  want " << want[i].dump() << "\n  got  " << got[i].dump();
    }
  }
  EXPECT_EQ(differing, 0u) << "of " << want.size() << " lines";

  // decode(encode(x)): the engine's ids back to text, as HF decodes its own.
  const fs::path ids = dir() / "ids.jsonl";
  std::ofstream(ids, std::ios::binary) << enc.output;
  const auto dec = testing_support::run_h2oflex_split(
      "tokenize --decode --model " + model + " --input " + ids.string(), dir().string());
  ASSERT_EQ(dec.exit_code, 0) << dec.errors;
  const std::vector<json> text = testing_support::parse_jsonl(dec.output);
  ASSERT_EQ(text.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(text[i]["text"], want[i].value("text", texts[i]["text"]))
        << kind.name << " line " << i + 1;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, CorpusSlice,
    ::testing::Values(Kind{"gpt2-opt", "tokenizer"}, Kind{"llama2", "tokenizer-llama2"},
                      Kind{"llama2-metaspace", "tokenizer-llama2-metaspace"},
                      Kind{"llama3", "tokenizer-llama3"}, Kind{"neox", "tokenizer-neox"},
                      Kind{"qwen2", "tokenizer-qwen2"}, Kind{"smollm2-small", "tokenizer-smollm2"},
                      Kind{"smollm2", nullptr}, Kind{"smollm2", nullptr, true},
                      // tokenizer-llama2's SentencePiece vocabulary as GGUF metadata (tokens,
                      // scores, types), against transformers loading the same file
                      Kind{"llama2-gguf", "gguf/llama2-spm.gguf", true}),
    [](const auto& info) {
      std::string name = info.param.name;
      if (info.param.gguf && !name.ends_with("-gguf")) name += "-gguf";
      for (char& c : name) c = c == '-' ? '_' : c;
      return name;
    });

}  // namespace
}  // namespace h2oflex
