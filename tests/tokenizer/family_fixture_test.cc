// load_tokenizer() against Hugging Face reference ids for the Llama-3, Qwen2, Llama-2 / Mistral,
// GPT-NeoX and SmolLM2 kinds (tests/fixtures/tokenizer-*/, written by
// tools/gen_family_tokenizer_fixtures.py).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

fs::path fixture_dir(const std::string& kind) {
  return fs::path(H2OFLEX_SOURCE_DIR) / "tests" / "fixtures" / ("tokenizer-" + kind);
}

std::vector<nlohmann::json> read_records(const std::string& kind, const std::string& record_kind) {
  std::ifstream in(fixture_dir(kind) / "expected.jsonl");
  EXPECT_TRUE(in.is_open()) << kind;
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json rec = nlohmann::json::parse(line);
    if (rec["kind"] == record_kind) out.push_back(std::move(rec));
  }
  return out;
}

std::string shown(const std::string& text) {
  return nlohmann::json(text).dump();
}

class FamilyFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { tok_.emplace(load_tokenizer(fixture_dir(GetParam()))); }
  const BpeTokenizer& tok() const { return *tok_; }
  // The ids of `ids` without the template's BOS / EOS.
  std::vector<int32_t> without_template(const std::vector<int32_t>& ids) const {
    const size_t before = tok().bos_to_prepend() ? 1 : 0;
    const size_t after = tok().eos_to_append() ? 1 : 0;
    return std::vector<int32_t>(ids.begin() + before, ids.end() - after);
  }
  std::optional<BpeTokenizer> tok_;
};

TEST_P(FamilyFixture, EncodeMatchesReferenceOnEveryLine) {
  const auto records = read_records(GetParam(), "encode");
  ASSERT_GE(records.size(), 2000u);
  size_t mismatches = 0;
  for (const auto& rec : records) {
    const std::string text = rec["text"];
    const std::vector<int32_t> want = rec["ids"];
    const std::vector<int32_t> got = tok().encode(text);
    if (got != want && ++mismatches <= 10) {
      ADD_FAILURE() << "text " << shown(text) << "\n  want " << nlohmann::json(want).dump()
                    << "\n  got  " << nlohmann::json(got).dump();
    }
    EXPECT_EQ(tok().encode(text, /*add_bos=*/false), without_template(want)) << shown(text);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << records.size() << " lines";
}

TEST_P(FamilyFixture, DroppedBytesAreCountedAsTheReferenceDropsThem) {
  // Bytes the vocabulary has no token for (SmolLM2's kind lacks 21) are dropped as HF drops them
  // (the ids above), and counted: the records' count comes from HF's tokens.
  size_t lines_dropping = 0;
  for (const auto& rec : read_records(GetParam(), "encode")) {
    const std::string text = rec["text"];
    size_t dropped = 99;
    tok().encode(text, /*add_bos=*/true, &dropped);
    EXPECT_EQ(dropped, rec.value("dropped_bytes", size_t{0})) << shown(text);
    lines_dropping += dropped > 0;
  }
  if (GetParam() == "smollm2") {
    EXPECT_GE(lines_dropping, 100u);
  }
}

TEST_P(FamilyFixture, DecodeMatchesReferenceOnEveryLine) {
  size_t round_trips = 0;
  for (const auto& rec : read_records(GetParam(), "encode")) {
    const std::string text = rec["text"];
    const std::vector<int32_t> ids = rec["ids"];
    // Special tokens skipped: the template's BOS / EOS and any special token in the text go.
    EXPECT_EQ(tok().decode(ids), rec.value("decoded", text)) << shown(text);
    // Kept, the text comes back wherever Hugging Face's decode gives it back.
    const std::string all = tok().decode(without_template(ids), /*skip_special=*/false);
    EXPECT_EQ(all, rec.value("decoded_all", text)) << shown(text);
    round_trips += all == text;
  }
  EXPECT_GE(round_trips, 1000u);
}

TEST_P(FamilyFixture, DecodeMatchesReferenceOnArbitraryIds) {
  const auto records = read_records(GetParam(), "decode");
  ASSERT_GE(records.size(), 100u);
  for (const auto& rec : records) {
    const std::vector<int32_t> ids = rec["ids"];
    const bool skip = rec["skip_special"];
    EXPECT_EQ(tok().decode(ids, skip), rec["text"].get<std::string>())
        << nlohmann::json(ids).dump() << " skip_special=" << skip;
  }
}

TEST_P(FamilyFixture, LosslessDecodeKeepsTheEncodedBytes) {
  // Any byte string survives encode + decode_bytes for the byte-level kinds; for the
  // SentencePiece kinds the characters outside the vocabulary come back through byte fallback.
  const std::string text =
      "\xC3\xBC"
      "ber \xE4\xB8\xAD \xF0\x9F\x98\x80 x";
  const std::vector<int32_t> ids = tok().encode(text, /*add_bos=*/false);
  if (GetParam() == "llama2-metaspace") {  // no byte tokens for 4-byte characters: <unk>
    EXPECT_NE(std::find(ids.begin(), ids.end(), *tok().token_to_id("<unk>")), ids.end());
  } else if (GetParam() == "llama2") {
    EXPECT_EQ(tok().decode_bytes(ids, false), text);
  } else if (GetParam() == "smollm2") {  // no tokens for the bytes 0xFE and 0xFF: dropped
    EXPECT_EQ(tok().decode_bytes(ids, false), text);
    size_t dropped = 0;
    const std::vector<int32_t> broken = tok().encode("a\xFF\xFE b\xC3", false, &dropped);
    EXPECT_EQ(tok().decode_bytes(broken, false), "a b\xC3");
    EXPECT_EQ(dropped, 2u);
  } else {
    EXPECT_EQ(tok().decode_bytes(ids, false), text);
    const std::string broken = "a\xFF\xFE b\xC3";
    EXPECT_EQ(tok().decode_bytes(tok().encode(broken, false), false), broken);
  }
}

class MissingByteTokens : public testing_support::ScratchDirTest {};

TEST_F(MissingByteTokens, BecomeTheUnknownTokenWhenTheModelHasOne) {
  // The SmolLM2-like fixture with an unknown token: a byte without a token becomes it (fused
  // with its unknown neighbours under fuse_unk) instead of being dropped. Expected ids are
  // Hugging Face's for the same edited file.
  std::ifstream in(fixture_dir("smollm2") / "tokenizer.json");
  nlohmann::json root = nlohmann::json::parse(in);
  root["model"]["unk_token"] = "<|endoftext|>";  // id 0
  using Ids = std::vector<int32_t>;
  for (const bool fuse : {false, true}) {
    root["model"]["fuse_unk"] = fuse;
    std::ofstream(dir() / "tokenizer.json") << root.dump();
    const BpeTokenizer tok = load_tokenizer(dir());
    size_t dropped = 99;
    EXPECT_EQ(tok.encode("a\x04"
                         "b",
                         false, &dropped),
              (Ids{67, 0, 68}));
    EXPECT_EQ(dropped, 0u);
    EXPECT_EQ(tok.encode("!\x04!", false), (Ids{3, 0, 3}));
    EXPECT_EQ(tok.encode("\x04\x06", false), fuse ? Ids{0} : (Ids{0, 0}));
    EXPECT_EQ(tok.encode("x\x1d\x1dy", false), fuse ? (Ids{90, 0, 91}) : (Ids{90, 0, 0, 91}));
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, FamilyFixture,
                         ::testing::Values("llama3", "qwen2", "llama2", "llama2-metaspace", "neox",
                                           "smollm2"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

int32_t id_of(const BpeTokenizer& tok, const char* token) {
  const auto id = tok.token_to_id(token);
  EXPECT_TRUE(id.has_value()) << token;
  return id.value_or(-100);
}

TEST(FamilyConventions, Llama3) {
  const BpeTokenizer tok = load_tokenizer(fixture_dir("llama3"));
  const int32_t begin = id_of(tok, "<|begin_of_text|>");
  EXPECT_EQ(tok.bos_to_prepend(), begin);  // from the post_processor
  EXPECT_EQ(tok.eos_to_append(), std::nullopt);
  EXPECT_EQ(tok.bos_id(), begin);
  EXPECT_EQ(tok.eos_id(), id_of(tok, "<|eot_id|>"));  // tokenizer_config.json
  // generation_config.json lists both; eos_id() is one of them.
  EXPECT_EQ(tok.stop_ids(),
            (std::vector<int32_t>{id_of(tok, "<|end_of_text|>"), id_of(tok, "<|eot_id|>")}));
  EXPECT_EQ(tok.pad_id(), -1);
  EXPECT_TRUE(tok.is_special(begin));
  EXPECT_FALSE(tok.is_special(id_of(tok, "[tag]")));
}

TEST(FamilyConventions, Qwen2) {
  const BpeTokenizer tok = load_tokenizer(fixture_dir("qwen2"));
  EXPECT_EQ(tok.bos_to_prepend(), std::nullopt);
  EXPECT_EQ(tok.bos_id(), -1);  // tokenizer_config.json says bos_token: null
  EXPECT_EQ(tok.eos_id(), id_of(tok, "<|im_end|>"));
  EXPECT_EQ(tok.pad_id(), id_of(tok, "<|endoftext|>"));
  EXPECT_EQ(tok.stop_ids(),
            (std::vector<int32_t>{id_of(tok, "<|endoftext|>"), id_of(tok, "<|im_end|>")}));
}

TEST(FamilyConventions, Llama2AndItsMetaspaceConversion) {
  const BpeTokenizer legacy = load_tokenizer(fixture_dir("llama2"));
  EXPECT_EQ(legacy.bos_to_prepend(), 1);
  EXPECT_EQ(legacy.eos_to_append(), std::nullopt);
  EXPECT_EQ(legacy.bos_id(), 1);
  EXPECT_EQ(legacy.eos_id(), 2);
  EXPECT_EQ(legacy.stop_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(legacy.token_to_id("<0x0A>"), 3 + 0x0A);
  const BpeTokenizer metaspace = load_tokenizer(fixture_dir("llama2-metaspace"));
  EXPECT_EQ(metaspace.bos_to_prepend(), 1);
  EXPECT_EQ(metaspace.eos_to_append(), 2);
  EXPECT_EQ(metaspace.encode("").size(), 2u);
}

TEST(FamilyConventions, NeoX) {
  const BpeTokenizer tok = load_tokenizer(fixture_dir("neox"));
  EXPECT_EQ(tok.bos_to_prepend(), std::nullopt);  // GPT-NeoX prepends nothing
  EXPECT_EQ(tok.bos_id(), 0);
  EXPECT_EQ(tok.eos_id(), 0);
  EXPECT_EQ(tok.stop_ids(), std::vector<int32_t>{0});
  EXPECT_FALSE(tok.is_special(id_of(tok, "  ")));  // runs of spaces are plain added tokens
}

TEST(FamilyConventions, OptDemoReadsAsBeforeThroughLoadTokenizer) {
  const fs::path demo = fs::path(H2OFLEX_SOURCE_DIR) / "models" / "demo" / "opt-demo";
  const BpeTokenizer general = load_tokenizer(demo);
  const BpeTokenizer opt = BpeTokenizer::load(demo);
  for (const char* text : {"Hello, world!", "</s>x<pad> y", "  \n\tCafé 中文"}) {
    EXPECT_EQ(general.encode(text), opt.encode(text)) << text;
    EXPECT_EQ(general.encode(text, false), opt.encode(text, false)) << text;
  }
  EXPECT_EQ(general.bos_to_prepend(), 2);
  EXPECT_EQ(general.eos_id(), 2);
  EXPECT_EQ(general.pad_id(), 1);
  EXPECT_EQ(general.stop_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(opt.stop_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(opt.bos_to_prepend(), 2);
}

}  // namespace
}  // namespace h2oflex
