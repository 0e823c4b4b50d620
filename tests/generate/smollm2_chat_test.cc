// `h2oflex generate` on the real SmolLM2-135M-Instruct answers chat requests with Hugging Face
// transformers' greedy text: the model's chat template, its tokenizer (special tokens such as
// <|im_start|> as their ids) and its weights together (tests/fixtures/smollm2_chat, from
// tools/gen_smollm2_chat_fixture.py). The model directory is the one tools/fetch_smollm2.sh
// makes (test.sh fetches it).
#include <gtest/gtest.h>

#include <map>

#include "models/chat_template/model_chat_template.h"
#include "tests/generate/generate_test_support.h"
#include "tests/support/run_binary.h"

namespace h2oflex::generate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Where tools/fetch_smollm2.sh puts the model (its --print-dir, read by tests/CMakeLists.txt).
fs::path smollm2_dir() {
  return H2OFLEX_SMOLLM2_DIR;
}

using SmolLM2Chat = testing::GenerateScratchTest;

json chat_fixture() {
  std::ifstream in(fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/smollm2_chat/expected.json");
  return json::parse(in);
}

// The prompt ids themselves: the template's text tokenized without added special tokens gives
// apply_chat_template's ids, <|im_start|> and <|im_end|> as their own ids.
TEST_F(SmolLM2Chat, PromptIdsEqualApplyChatTemplates) {
  const fs::path model = smollm2_dir();
  ASSERT_TRUE(fs::exists(model / "tokenizer.json"))
      << model << " is missing: run tools/fetch_smollm2.sh (test.sh does)";
  const BpeTokenizer tokenizer = load_tokenizer(model);  // as generate loads it
  const auto chat = chat_template::load_model_chat_template(model);
  ASSERT_TRUE(chat) << model << " has no chat template";
  const json fixture = chat_fixture();  // held: the loop reads into it
  for (const json& c : fixture["cases"]) {
    const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(c["messages"].dump());
    const std::string text = chat->render(chat_template::value_from_json(messages), true);
    EXPECT_EQ(tokenizer.encode(text, /*add_bos=*/false),
              c["prompt_ids"].get<std::vector<int32_t>>())
        << c["name"] << ": " << text;
  }
}

TEST_F(SmolLM2Chat, AnswersChatRequestsWithTransformersGreedyText) {
  const fs::path model = smollm2_dir();
  ASSERT_TRUE(fs::exists(model / "model.safetensors"))
      << model << " is missing: run tools/fetch_smollm2.sh (test.sh does)";
  const json fixture = chat_fixture();
  // Both chat line formats: OpenAI batch lines, and the plain format for the last case.
  std::string lines;
  const size_t n = fixture["cases"].size();
  for (size_t k = 0; k < n; ++k) {
    const json& c = fixture["cases"][k];
    json line;
    if (k + 1 < n) {
      line = {{"custom_id", c["name"]},
              {"method", "POST"},
              {"url", "/v1/chat/completions"},
              {"body",
               {{"model", "smollm2"},
                {"messages", c["messages"]},
                {"max_tokens", fixture["max_new_tokens"]}}}};
    } else {
      line = {{"id", c["name"]},
              {"messages", c["messages"]},
              {"max_new_tokens", fixture["max_new_tokens"]}};
    }
    lines += line.dump() + "\n";
  }
  testing::write_text(dir() / "in.jsonl", lines);
  const testing_support::Outcome run = testing_support::run_h2oflex(
      "generate --model " + model.string() + " --set dummy=false --input " +
      (dir() / "in.jsonl").string() + " --output " + (dir() / "out.jsonl").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, json> by_id;
  for (const json& j : testing::read_jsonl(dir() / "out.jsonl")) by_id[j["id"]] = j;
  ASSERT_EQ(by_id.size(), n) << run.output;
  for (const json& c : fixture["cases"]) {
    const json& r = by_id[c["name"].get<std::string>()];
    EXPECT_EQ(r["prompt_tokens"], c["prompt_ids"].size()) << c["name"];
    EXPECT_EQ(r["completion_tokens"], c["completion_ids"].size()) << c["name"];
    EXPECT_EQ(r["text"], c["text"]) << c["name"];
    EXPECT_EQ(r["finish_reason"], c["finish_reason"]) << c["name"];
    EXPECT_EQ(r["choices"][0]["message"]["content"], c["text"]) << c["name"];
  }
}

}  // namespace
}  // namespace h2oflex::generate
