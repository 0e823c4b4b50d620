// `h2oflex tokenize` as a user runs it: ids and dropped bytes per line as Hugging Face gives them
// (tests/fixtures/tokenizer-smollm2's records), --decode back, --no-special, and bad input
// refused with exit code 2 naming the file and the line, before anything is written.
#include <gtest/gtest.h>

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
using testing_support::run_h2oflex_split;

const fs::path kFixture = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/tokenizer-smollm2";

// The fixture's encode records: HF's ids (the template adds nothing for this kind) and dropped
// bytes counted from HF's tokens.
std::vector<json> encode_records() {
  std::ifstream in(kFixture / "expected.jsonl");
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) {
    json rec = json::parse(line);
    if (rec["kind"] == "encode") out.push_back(std::move(rec));
  }
  return out;
}

class TokenizeCommand : public testing_support::ScratchDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir() / name, std::ios::binary) << text;
    return dir() / name;
  }
  testing_support::SplitOutcome tokenize(const std::string& args) {
    return run_h2oflex_split("tokenize --model " + kFixture.string() + " " + args, dir().string());
  }
};

TEST_F(TokenizeCommand, IdsAndDroppedBytesMatchTheReferenceLineByLine) {
  const std::vector<json> records = encode_records();
  ASSERT_GE(records.size(), 2000u);
  std::string input;
  size_t dropping = 0;
  for (const json& rec : records) {
    input += json{{"text", rec["text"]}}.dump() + "\n";
    dropping += rec.contains("dropped_bytes");
  }
  const auto r = tokenize("--input " + write("in.jsonl", input).string());
  ASSERT_EQ(r.exit_code, 0) << r.errors;
  const std::vector<json> lines = testing_support::parse_jsonl(r.output);
  ASSERT_EQ(lines.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(lines[i]["ids"], records[i]["ids"]) << records[i]["text"].dump();
    EXPECT_EQ(lines[i].value("dropped_bytes", 0), records[i].value("dropped_bytes", 0))
        << records[i]["text"].dump();
  }
  // Never silently: stderr sums them up too.
  EXPECT_NE(r.errors.find("line(s) dropped"), std::string::npos) << r.errors;
  EXPECT_GE(dropping, 100u);
}

TEST_F(TokenizeCommand, DecodeGivesTheReferenceText) {
  // HF's decode with special tokens kept ("decoded_all" where it differs from the text) and
  // skipped ("decoded"), from the ids HF gave.
  std::string input;
  std::vector<json> records = encode_records();
  records.resize(400);
  for (const json& rec : records) input += json{{"ids", rec["ids"]}}.dump() + "\n";
  const fs::path in = write("ids.jsonl", input);
  const auto kept = tokenize("--decode --input " + in.string());
  ASSERT_EQ(kept.exit_code, 0) << kept.errors;
  const auto skipped = tokenize("--decode --no-special --input " + in.string());
  ASSERT_EQ(skipped.exit_code, 0) << skipped.errors;
  const std::vector<json> kept_lines = testing_support::parse_jsonl(kept.output);
  const std::vector<json> skipped_lines = testing_support::parse_jsonl(skipped.output);
  ASSERT_EQ(kept_lines.size(), records.size());
  ASSERT_EQ(skipped_lines.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const json& text = records[i]["text"];
    EXPECT_EQ(kept_lines[i]["text"], records[i].value("decoded_all", text)) << text.dump();
    EXPECT_EQ(skipped_lines[i]["text"], records[i].value("decoded", text)) << text.dump();
  }
}

TEST_F(TokenizeCommand, EncodeOutputDecodesAsItIsAndBlankLinesAreSkipped) {
  const fs::path in = write("in.jsonl",
                            "\xEF\xBB\xBF{\"text\": \"a\\u0004b\"}\r\n\n  \n"
                            "{\"text\": \"<|im_start|>hi\"}\n");
  const auto enc = tokenize("--input " + in.string());
  ASSERT_EQ(enc.exit_code, 0) << enc.errors;
  const std::vector<json> lines = testing_support::parse_jsonl(enc.output);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["dropped_bytes"], 1);
  EXPECT_FALSE(lines[1].contains("dropped_bytes"));
  const auto dec = tokenize("--decode --input " + write("ids.jsonl", enc.output).string());
  ASSERT_EQ(dec.exit_code, 0) << dec.errors;
  EXPECT_EQ(testing_support::parse_jsonl(dec.output),
            (std::vector<json>{{{"text", "ab"}}, {{"text", "<|im_start|>hi"}}}));
  const auto plain =
      tokenize("--decode --no-special --input " + write("ids2.jsonl", enc.output).string());
  EXPECT_EQ(testing_support::parse_jsonl(plain.output),
            (std::vector<json>{{{"text", "ab"}}, {{"text", "hi"}}}));
}

TEST_F(TokenizeCommand, NoSpecialLeavesOutWhatTheModelPutsAroundAText) {
  // The llama-2 fixture puts <s> (id 1) before every text; --no-special does not.
  const fs::path llama2 = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/tokenizer-llama2";
  const fs::path in = write("in.jsonl", "{\"text\": \"hello\"}\n");
  const auto with = run_h2oflex_split(
      "tokenize --model " + llama2.string() + " --input " + in.string(), dir().string());
  const auto without = run_h2oflex_split(
      "tokenize --no-special --model " + llama2.string() + " --input " + in.string(),
      dir().string());
  ASSERT_EQ(with.exit_code, 0) << with.errors;
  ASSERT_EQ(without.exit_code, 0) << without.errors;
  std::vector<int> ids = testing_support::parse_jsonl(with.output).at(0)["ids"];
  const std::vector<int> plain = testing_support::parse_jsonl(without.output).at(0)["ids"];
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
  ids.erase(ids.begin());
  EXPECT_EQ(ids, plain);
}

TEST_F(TokenizeCommand, BadLinesExitTwoNamingFileAndLineWithNothingWritten) {
  struct Case {
    std::string input;
    bool decode;
    std::string message_part;
  };
  const Case cases[] = {
      {"{\"text\": \"ok\"}\n{\"text\": \"x\"\n", false, "line 2: invalid JSON"},
      {"{\"text\": \"ok\"}\n\n[1, 2]\n", false, "line 3: expected {\"text\""},
      {"{\"text\": 5}\n", false, "line 1: 'text' must be a string"},
      {"{\"text\": \"a\", \"id\": 1}\n", false, "line 1: unknown key 'id'"},
      {"{\"prompt\": \"a\"}\n", false, "line 1: unknown key 'prompt'"},
      {"{}\n", false, "line 1: no 'text'"},
      {"{\"ids\": [1, 2]}\n{\"ids\": [1, -3]}\n", true, "line 2: ids[1] must be an integer"},
      {"{\"ids\": [4294967296]}\n", true, "line 1: ids[0] must be an integer"},
      {"{\"ids\": [1.5]}\n", true, "line 1: ids[0] must be an integer"},
      {"{\"ids\": \"1 2\"}\n", true, "line 1: 'ids' must be an array"},
      {"{\"text\": \"a\"}\n", true, "line 1: unknown key 'text'"},
  };
  for (const Case& c : cases) {
    const fs::path in = write("bad.jsonl", c.input);
    const auto r = tokenize(std::string(c.decode ? "--decode " : "") + "--input " + in.string());
    EXPECT_EQ(r.exit_code, 2) << c.input << r.errors;
    EXPECT_NE(r.errors.find(in.string()), std::string::npos) << r.errors;
    EXPECT_NE(r.errors.find(c.message_part), std::string::npos) << r.errors;
    EXPECT_EQ(r.output, "") << c.input;
  }
  const auto missing = tokenize("--input " + (dir() / "none.jsonl").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.errors.find("none.jsonl"), std::string::npos) << missing.errors;
  const auto no_model =
      run_h2oflex_split("tokenize --model " + (dir() / "nomodel").string() + " --input " +
                            write("in.jsonl", "{\"text\": \"a\"}\n").string(),
                        dir().string());
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.errors.find("nomodel"), std::string::npos) << no_model.errors;
}

}  // namespace
}  // namespace h2oflex
