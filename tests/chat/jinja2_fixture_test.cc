// The chat templates of every supported family, rendered for several conversations: the same
// strings as Python's jinja2 configured as transformers configures it, and the same
// raise_exception() messages (tests/fixtures/chat_templates, from
// tools/gen_chat_template_fixtures.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "models/chat_template/chat_template.h"
#include "models/chat_template/template_error.h"

namespace h2oflex::chat_template {
namespace {

namespace fs = std::filesystem;

nlohmann::ordered_json fixture() {
  std::ifstream in(fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/chat_templates/expected.json");
  return nlohmann::ordered_json::parse(in);
}

TEST(ChatTemplateFixture, EveryCaseRendersAsJinja2Does) {
  const nlohmann::ordered_json doc = fixture();
  std::map<std::string, ChatTemplate> templates;
  for (const auto& [name, t] : doc["templates"].items()) {
    Dict variables;
    for (const auto& [key, value] : t["variables"].items()) {
      variables.emplace_back(key, Value::string(value.get<std::string>()));
    }
    templates.emplace(name, ChatTemplate(t["source"].get<std::string>(), name, variables));
  }
  // Every supported family is covered, and each conversation both ways.
  for (const char* family :
       {"llama2-chat", "llama3-instruct", "mistral-instruct", "qwen2-instruct", "smollm2"}) {
    EXPECT_EQ(templates.count(family), 1u) << family;
  }
  int rendered = 0;
  int raised = 0;
  for (const auto& c : doc["cases"]) {
    const std::string label = c["template"].get<std::string>() + " / " +
                              c["conversation"].get<std::string>() +
                              (c["add_generation_prompt"].get<bool>() ? " (+prompt)" : "");
    const ChatTemplate& t = templates.at(c["template"].get<std::string>());
    const Value messages = value_from_json(c["messages"]);
    if (c.contains("error")) {
      try {
        const std::string out = t.render(messages, c["add_generation_prompt"].get<bool>());
        ADD_FAILURE() << label << ": rendered '" << out << "', jinja2 raised "
                      << c["error"].get<std::string>();
      } catch (const RaisedException& e) {
        EXPECT_EQ(std::string(e.what()), c["error"].get<std::string>()) << label;
        ++raised;
      }
      continue;
    }
    EXPECT_EQ(t.render(messages, c["add_generation_prompt"].get<bool>()),
              c["expected"].get<std::string>())
        << label;
    ++rendered;
  }
  EXPECT_GE(rendered, 60);
  EXPECT_GE(raised, 8);  // Llama-2's and Mistral's alternation checks, Mistral's role check
}

// The rules templates lean on (whitespace control, escapes, Python's printing of values, scopes,
// methods, filters), each a small template rendered with the same variable `x` as jinja2.
TEST(ChatTemplateFixture, EverySnippetRendersOrFailsAsJinja2Does) {
  const nlohmann::ordered_json doc = fixture();
  const Dict variables = {{"x", value_from_json(doc["snippet_x"])}};
  ASSERT_GE(doc["snippets"].size(), 20u);
  for (const auto& snippet : doc["snippets"]) {
    const std::string source = snippet["source"].get<std::string>();
    const ChatTemplate t(source, "snippet", variables);
    if (snippet.contains("expected")) {
      EXPECT_EQ(t.render(Value::of_list({}), false), snippet["expected"].get<std::string>())
          << source;
      continue;
    }
    std::string error = snippet["error"].get<std::string>();
    if (error.rfind("TypeError: ", 0) == 0) error = error.substr(11);
    try {
      t.render(Value::of_list({}), false);
      ADD_FAILURE() << source << ": rendered, jinja2 raised " << error;
    } catch (const RaisedException& e) {
      EXPECT_EQ(std::string(e.what()), error) << source;
    } catch (const TemplateError& e) {
      EXPECT_EQ(std::string(e.what()), "line 1: " + error) << source;
    }
  }
}

}  // namespace
}  // namespace h2oflex::chat_template
