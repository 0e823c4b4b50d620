// `h2oflex generate` on the real SmolLM2-135M-Instruct answers chat requests with Hugging Face
// transformers' greedy text: the model's chat template, its tokenizer (special tokens such as
// <|im_start|> as their ids) and its weights together (tests/fixtures/smollm2_chat, from
// tools/gen_smollm2_chat_fixture.py). The model directory is the one tools/fetch_smollm2.sh
// makes (test.sh fetches it), and the GGUF file it is converted from, read natively (its
// tokenizer and chat template from the metadata).
#include <gtest/gtest.h>

#include <map>

#include "models/chat_template/model_chat_template.h"
#include "models/gguf/gguf_tokenizer.h"
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

fs::path smollm2_gguf() {
  return H2OFLEX_SMOLLM2_GGUF;
}

// The prompt ids themselves: the template's text tokenized without added special tokens gives
// apply_chat_template's ids, <|im_start|> and <|im_end|> as their own ids.
void expect_prompt_ids(const BpeTokenizer& tokenizer,
                       const std::optional<chat_template::ChatTemplate>& chat) {
  ASSERT_TRUE(chat) << "the model has no chat template";
  const json fixture = chat_fixture();  // held: the loop reads into it
  for (const json& c : fixture["cases"]) {
    const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(c["messages"].dump());
    const std::string text = chat->render(chat_template::value_from_json(messages), true);
    EXPECT_EQ(tokenizer.encode(text, /*add_bos=*/false),
              c["prompt_ids"].get<std::vector<int32_t>>())
        << c["name"] << ": " << text;
  }
}

TEST_F(SmolLM2Chat, PromptIdsEqualApplyChatTemplates) {
  const fs::path model = smollm2_dir();
  ASSERT_TRUE(fs::exists(model / "tokenizer.json"))
      << model << " is missing: run tools/fetch_smollm2.sh (test.sh does)";
  // As generate loads them.
  expect_prompt_ids(load_tokenizer(model), chat_template::load_model_chat_template(model));
}

TEST_F(SmolLM2Chat, PromptIdsEqualApplyChatTemplatesThroughTheGgufMetadata) {
  ASSERT_TRUE(fs::exists(smollm2_gguf()))
      << smollm2_gguf() << " is missing: run tools/fetch_smollm2.sh (test.sh does)";
  const GgufFile file = GgufFile::open(smollm2_gguf());
  expect_prompt_ids(load_gguf_tokenizer(file), load_gguf_chat_template(file));
}

void expect_transformers_answers(const fs::path& model, const fs::path& dir) {
  ASSERT_TRUE(fs::exists(model)) << model
                                 << " is missing: run tools/fetch_smollm2.sh (test.sh does)";
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
  testing::write_text(dir / "in.jsonl", lines);
  const testing_support::Outcome run = testing_support::run_h2oflex(
      "generate --model " + model.string() + " --set dummy=false --input " +
      (dir / "in.jsonl").string() + " --output " + (dir / "out.jsonl").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::map<std::string, json> by_id;
  for (const json& j : testing::read_jsonl(dir / "out.jsonl")) by_id[j["id"]] = j;
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

TEST_F(SmolLM2Chat, AnswersChatRequestsWithTransformersGreedyText) {
  expect_transformers_answers(smollm2_dir(), dir());
}

// The GGUF file itself: its weights, tokenizer and chat template, no converted directory.
TEST_F(SmolLM2Chat, AnswersChatRequestsWithTransformersGreedyTextFromTheGgufFile) {
  expect_transformers_answers(smollm2_gguf(), dir());
}

}  // namespace
}  // namespace h2oflex::generate
