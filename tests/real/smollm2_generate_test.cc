// `h2oflex generate` on SmolLM2-135M-Instruct through the model's own tokenizer: the text of each
// greedy completion is Hugging Face's (tests/fixtures/smollm2/expected.json's completion_text:
// its greedy tokens up to the first EOS, decoded without special tokens).
#include <gtest/gtest.h>

#include <map>

#include "experiments/generate/generate_command.h"
#include "tests/generate/generate_test_support.h"
#include "tests/real/smollm2.h"

namespace h2oflex::real {
namespace {

using nlohmann::json;

class SmolLM2Generate : public testing::GenerateScratchTest {
 protected:
  // Runs `lines` (request lines of the given prompts, max_new_tokens = the fixture's steps) and
  // returns each result's text by id.
  std::map<std::string, std::string> generate(const std::vector<json>& lines) {
    std::string input;
    for (const json& l : lines) input += l.dump() + "\n";
    testing::write_text(dir() / "in.jsonl", input);
    GenerateJobOptions o;
    o.model_dir = smollm2_dir();
    o.input = (dir() / "in.jsonl").string();
    o.output = (dir() / "out.jsonl").string();
    o.overrides = {"compute_dtype=f32", "gen_len=" + smollm2_expected()["greedy_steps"].dump()};
    EXPECT_EQ(run_generate(o), 0);
    std::map<std::string, std::string> text;
    for (const json& j : testing::read_jsonl(dir() / "out.jsonl")) text[j.at("id")] = j.at("text");
    return text;
  }
};

TEST_F(SmolLM2Generate, PlainPromptsGiveTransformersText) {
  ASSERT_FALSE(smollm2_dir().empty());
  std::vector<json> lines;
  std::map<std::string, std::string> want;
  for (const auto& p : smollm2_expected()["prompts"]) {
    if (p["kind"] != "plain") continue;
    lines.push_back({{"id", p["name"]}, {"prompt", p["text"]}});
    want[p["name"]] = p["completion_text"];
  }
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(generate(lines), want);
}

// Chat requests (the fixture's prompts of kind "chat": `messages` and completion_text) join
// here once `generate` renders the model's chat template: the same generate() with lines of
// {"id", "messages"}.

}  // namespace
}  // namespace h2oflex::real
