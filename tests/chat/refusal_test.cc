// What the renderer does not support is refused when the template is read, naming the construct
// and its line, so no request is rendered with a template half understood; failures while
// rendering name the line too.
#include <gtest/gtest.h>

#include <string>

#include "models/chat_template/chat_template.h"
#include "models/chat_template/template_error.h"
#include "runtime/core/error.h"

namespace h2oflex::chat_template {
namespace {

// The InputError message for compiling `source`, or "" when it compiles.
std::string refusal(const std::string& source) {
  try {
    ChatTemplate t(source, "tokenizer_config.json: chat_template", {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ChatTemplateRefusal, UnsupportedConstructsAreNamedWithTheirLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"{% macro m() %}x{% endmacro %}", "line 1: the 'macro' tag is not supported"},
      {"a\n{% include 'other' %}", "line 2: the 'include' tag is not supported"},
      {"{% raw %}{{ x }}{% endraw %}", "line 1: the 'raw' tag is not supported"},
      {"{{ x | selectattr('a') }}", "line 1: the filter 'selectattr' is not supported"},
      {"{{ x is divisibleby(3) }}", "line 1: the test 'divisibleby' is not supported"},
      {"{{ x is string 3 }}", "line 1: the test 'string' takes no argument here"},
      {"{{ x.append(1) }}", "line 1: the method 'append()' is not supported"},
      {"{{ cycler(1) }}", "line 1: the function 'cycler' is not supported"},
      {"{{ strftime_now('%d') }}", "line 1: strftime_now (today's date in the prompt) is not"},
      {"{% for x in y recursive %}{% endfor %}", "line 1: recursive for-loops are not supported"},
      {"{% set x %}a{% endset %}", "line 1: the block form of 'set'"},
      {"{{ a < b < c }}", "line 1: chained comparisons are not supported"},
      {"{% if x %}", "line 1: unexpected end of template, expected one of 'elif', 'else', 'endif'"},
      {"{{ 'unterminated }}", "line 1: unterminated string literal"},
      {"{# open comment", "line 1: missing end of comment tag"},
  };
  for (const auto& [source, expected] : cases) {
    const std::string message = refusal(source);
    EXPECT_NE(message.find("chat template tokenizer_config.json: chat_template, "),
              std::string::npos)
        << source << " -> " << message;
    EXPECT_NE(message.find(expected), std::string::npos) << source << " -> " << message;
  }
  EXPECT_EQ(refusal("{% for m in messages %}{{ m.content | trim }}{% endfor %}"), "");
  // Nesting is bounded, so a hostile template cannot exhaust the stack.
  EXPECT_NE(refusal("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}")
                .find("nesting deeper than 200 levels"),
            std::string::npos);
  std::string deep_ifs;
  for (int k = 0; k < 300; ++k) deep_ifs += "{% if true %}";
  EXPECT_NE(refusal(deep_ifs).find("nesting deeper than 200 levels"), std::string::npos);
  EXPECT_NE(refusal("{{ " +
                    [] {
                      std::string nots;
                      for (int k = 0; k < 100000; ++k) nots += "not ";
                      return nots;
                    }() +
                    "x }}")
                .find("nesting deeper"),
            std::string::npos);
}

TEST(ChatTemplateRefusal, RenderFailuresNameTheLine) {
  const ChatTemplate t("ok\n{{ messages[0].content | upper }}\n{{ messages[5].x }}", "t", {});
  try {
    t.render(value_from_json(nlohmann::ordered_json::parse(R"([{"content": "été"}])")), true);
    FAIL() << "rendered upper-cased text beyond ASCII, which Python's str.upper() maps";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(std::string(e.what()).find("beyond ASCII"), std::string::npos) << e.what();
  }
  try {
    t.render(value_from_json(nlohmann::ordered_json::parse(R"([{"content": "ok"}])")), true);
    FAIL() << "an attribute of an undefined item rendered";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(std::string(e.what()).find("has no element 5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace h2oflex::chat_template
