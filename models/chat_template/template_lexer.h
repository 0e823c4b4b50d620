// Splits a chat template into tokens the way jinja2's lexer does in the environment transformers
// renders chat templates with: trim_blocks and lstrip_blocks on, keep_trailing_newline off,
// "{%-" / "-%}" / "{{-" / "-}}" / "{#-" / "-#}" strip whitespace, "+" keeps it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace h2oflex::chat_template {

struct Token {
  enum class Kind {
    kData,        // template text, printed as is
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,  // text holds the literal's value, escapes resolved
    kInt,
    kFloat,
    kOperator,  // text holds the operator: "+", "//", "==", "(", ...
    kEnd,
  };
  Kind kind;
  std::string text;
  int line;  // 1-based line of the template
};

// Throws TemplateError (template_error.h) naming the line for text jinja2 cannot lex, and for
// a "{% raw %}" block, which this renderer refuses.
std::vector<Token> lex_template(std::string_view source);

}  // namespace h2oflex::chat_template
