// Chat requests in a generate job: rendered with the model directory's chat template, tokenized
// without added special tokens (the template writes them), answered with choices[0].message;
// a model without a template refuses the job before anything is written, and a conversation the
// template rejects is a bad line like any other.
#include <gtest/gtest.h>

#include <set>

#include "experiments/generate/error_report.h"
#include "experiments/generate/generate_job.h"
#include "runtime/core/error.h"
#include "tests/generate/generate_test_support.h"

namespace h2oflex::generate {
namespace {

using nlohmann::json;
using testing::demo_tokenizer;
using testing::fake_generation;
using testing::read_jsonl;
using testing::write_text;

class ChatJobTest : public testing::GenerateScratchTest {
 protected:
  JobSettings settings() const {
    JobSettings s;
    s.input_path = (dir() / "in.jsonl").string();
    s.output_path = (dir() / "out.jsonl").string();
    s.block_size = 4;
    s.defaults.max_new_tokens = 5;
    s.max_positions = 256;
    s.stop_ids = {};
    s.chat_template_dir = (dir() / "model").string();
    return s;
  }
  void write_model(const std::string& tokenizer_config) {
    std::filesystem::create_directories(dir() / "model");
    write_text(dir() / "model" / "tokenizer_config.json", tokenizer_config);
  }
  // Runs the job with a fake engine, keeping every prompt it was given.
  JobSummary run() {
    return run_generate_job(settings(), demo_tokenizer(), [this](const BlockWork& w) {
      std::vector<std::vector<int32_t>> out;
      for (const auto& p : w.prompts) {
        prompts_.insert(p);
        out.push_back(fake_generation(p, w.gen_len));
      }
      return out;
    });
  }
  std::set<std::vector<int32_t>> prompts_;
};

// "</s>" is the demo (OPT) tokenizer's BOS: the template writes it, nothing else adds one.
constexpr const char* kConfig =
    R"({"bos_token": "</s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}{% for m in )"
    R"(messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %})"
    R"(assistant:{% endif %}"})";

TEST_F(ChatJobTest, ChatLinesAreRenderedWithTheModelsTemplateAndAnsweredAsMessages) {
  write_model(kConfig);
  write_text(dir() / "in.jsonl",
             R"({"id": "plain", "prompt": "The river"})"
             "\n"
             R"({"id": "chat", "messages": [{"role": "system", "content": "Be brief."},)"
             R"( {"role": "user", "content": "Hi there"}]})"
             "\n"
             R"({"custom_id": "batch", "method": "POST", "url": "/v1/chat/completions",)"
             R"( "body": {"model": "m", "messages": [{"role": "user", "content": "A stone"}],)"
             R"( "max_tokens": 3}})"
             "\n");
  const JobSummary s = run();
  EXPECT_EQ(s.requests, 3);
  EXPECT_EQ(s.errors, 0);

  const BpeTokenizer& tok = demo_tokenizer();
  const std::vector<int32_t> chat_ids =
      tok.encode("</s>system: Be brief.\nuser: Hi there\nassistant:", /*add_bos=*/false);
  const std::vector<int32_t> batch_ids = tok.encode("</s>user: A stone\nassistant:", false);
  ASSERT_EQ(chat_ids.front(), tok.bos_id());  // the template's BOS, once
  ASSERT_NE(chat_ids[1], tok.bos_id());
  EXPECT_EQ(prompts_.count(chat_ids), 1u);
  EXPECT_EQ(prompts_.count(batch_ids), 1u);
  EXPECT_EQ(prompts_.count(tok.encode("The river", true)), 1u);

  std::map<std::string, json> by_id;
  for (const json& j : read_jsonl(dir() / "out.jsonl")) by_id[j["id"].get<std::string>()] = j;
  ASSERT_EQ(by_id.size(), 3u);
  for (const char* id : {"chat", "batch"}) {
    const json& j = by_id[id];
    ASSERT_TRUE(j.contains("choices")) << j;
    EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(j["choices"][0]["message"]["content"], j["text"]);
    EXPECT_EQ(j["choices"][0]["finish_reason"], j["finish_reason"]);
  }
  EXPECT_EQ(by_id["chat"]["prompt_tokens"], chat_ids.size());
  EXPECT_EQ(by_id["batch"]["completion_tokens"], 3);
  const std::vector<int32_t> answer = fake_generation(batch_ids, 3);
  EXPECT_EQ(by_id["batch"]["text"], tok.decode(answer));
  EXPECT_FALSE(by_id["plain"].contains("choices"));
}

TEST_F(ChatJobTest, AResumeWithAnotherTemplateIsRefused) {
  write_model(kConfig);
  write_text(dir() / "in.jsonl", R"({"id": "c", "messages": [{"role": "user", "content": "x"}]})"
                                 "\n");
  JobSettings s = settings();
  s.job_record = {{"model", "m"}};
  auto fake = [](const BlockWork& w) {
    std::vector<std::vector<int32_t>> out;
    for (const auto& p : w.prompts) out.push_back(fake_generation(p, w.gen_len));
    return out;
  };
  run_generate_job(s, demo_tokenizer(), fake);
  const std::string out_before = testing::read_text(dir() / "out.jsonl");
  // The same template resumes (nothing left to do); another is refused, naming the setting.
  EXPECT_EQ(run_generate_job(s, demo_tokenizer(), fake).completed, 0);
  write_model(R"({"bos_token": "</s>", "chat_template": "{{ messages[0].content }}"})");
  write_text(dir() / "in.jsonl", R"({"id": "c", "messages": [{"role": "user", "content": "x"}]})"
                                 "\n"
                                 R"({"id": "d", "messages": [{"role": "user", "content": "y"}]})"
                                 "\n");
  try {
    run_generate_job(s, demo_tokenizer(), fake);
    FAIL() << "resumed with another chat template";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("started with chat_template"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(testing::read_text(dir() / "out.jsonl"), out_before);
}

TEST_F(ChatJobTest, AModelWithoutATemplateRefusesTheJobNamingTheLineAndNothingIsWritten) {
  write_model(R"({"bos_token": "</s>"})");
  write_text(dir() / "in.jsonl", R"({"id": "plain", "prompt": "x"})"
                                 "\n"
                                 R"({"id": "c", "messages": [{"role": "user", "content": "x"}]})"
                                 "\n");
  try {
    run();
    FAIL() << "a chat request ran on a model without a chat template";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("input line 2 (id \"c\"): 'messages' needs the model's chat template"),
              std::string::npos)
        << m;
  }
  EXPECT_FALSE(std::filesystem::exists(dir() / "out.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(errors_path_for((dir() / "out.jsonl").string())));
}

TEST_F(ChatJobTest, ATemplateThisRendererRefusesStopsTheJobOnlyWhenAChatLineNeedsIt) {
  write_model(R"({"chat_template": "{% macro m() %}{% endmacro %}"})");
  write_text(dir() / "in.jsonl", R"({"id": "plain", "prompt": "x"})"
                                 "\n");
  EXPECT_EQ(run().completed, 1);  // plain prompts never read the template
  std::filesystem::remove(dir() / "out.jsonl");
  write_text(dir() / "in.jsonl", R"({"id": "c", "messages": [{"role": "user", "content": "x"}]})"
                                 "\n");
  try {
    run();
    FAIL() << "a template with a macro was used";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the 'macro' tag is not supported"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir() / "out.jsonl"));
}

TEST_F(ChatJobTest, AConversationTheTemplateRejectsIsABadLineWithTheTemplatesMessage) {
  write_model(
      R"({"chat_template": "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 )"
      R"(% 2 == 0) %}{{ raise_exception('Conversation roles must alternate') }}{% endif %})"
      R"({{ m.content }}{% endfor %}"})");
  write_text(dir() / "in.jsonl", R"({"id": "good", "messages": [{"role": "user", "content": "x"}]})"
                                 "\n"
                                 R"({"id": "bad", "messages": [{"role": "user", "content": "x"},)"
                                 R"( {"role": "user", "content": "y"}]})"
                                 "\n");
  const JobSummary s = run();
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.errors, 1);
  const std::vector<json> errors = read_jsonl(errors_path_for((dir() / "out.jsonl").string()));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["line"], 2);
  EXPECT_EQ(errors[0]["id"], "bad");
  EXPECT_NE(errors[0]["error"].get<std::string>().find(
                "rejects the messages: Conversation roles must alternate"),
            std::string::npos)
      << errors[0];
}

}  // namespace
}  // namespace h2oflex::generate
