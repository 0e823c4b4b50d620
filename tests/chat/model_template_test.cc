// Finding a model directory's chat template as transformers does, and its special-token
// variables.
#include <gtest/gtest.h>

#include <fstream>

#include "models/chat_template/model_chat_template.h"
#include "runtime/core/error.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex::chat_template {
namespace {

namespace fs = std::filesystem;

class ModelChatTemplate : public testing_support::ScratchDirTest {
 protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir() / name, std::ios::binary) << text;
  }
  std::string render_one() {
    const auto t = load_model_chat_template(dir());
    if (!t) return "<none>";
    return t->render(
        value_from_json(nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])")),
        true);
  }
};

TEST_F(ModelChatTemplate, AStringInTokenizerConfigWithTheSpecialTokensAsVariables) {
  write("tokenizer_config.json",
        R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>", "pad_token": null,
            "chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}{{ pad_token is defined }}"})");
  EXPECT_EQ(render_one(), "<s>hi</s>False");
}

TEST_F(ModelChatTemplate, TheDefaultOfANamedListAndTheJinjaFileFirst) {
  write("tokenizer_config.json", R"({"chat_template": [
      {"name": "tool_use", "template": "tools"},
      {"name": "default", "template": "default {{ add_generation_prompt }}"}]})");
  EXPECT_EQ(render_one(), "default True");
  write("chat_template.jinja", "from the file {{ messages | length }}\n");
  EXPECT_EQ(render_one(), "from the file 1");  // the final newline dropped, as jinja2 does
}

TEST_F(ModelChatTemplate, NoTemplateAndBadTemplatesNameTheFileAndKey) {
  EXPECT_EQ(render_one(), "<none>");
  write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_EQ(render_one(), "<none>");
  write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "x"}]})");
  EXPECT_THROW(
      {
        try {
          load_model_chat_template(dir());
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("chat_template: the list of chat templates has "
                                               "none named \"default\""),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      InputError);
  write("tokenizer_config.json", R"({"chat_template": 7})");
  EXPECT_THROW(load_model_chat_template(dir()), InputError);
  write("tokenizer_config.json", R"({"chat_template": "{% macro x() %}{% endmacro %}"})");
  try {
    load_model_chat_template(dir());
    FAIL() << "a macro was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: chat_template, line 1: the "
                                         "'macro' tag is not supported"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace h2oflex::chat_template
