// A model's chat template, compiled once and rendered for each conversation as Hugging Face
// transformers' apply_chat_template(messages, add_generation_prompt=...) renders it.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "models/chat_template/template_ast.h"
#include "models/chat_template/template_value.h"

namespace h2oflex::chat_template {

class ChatTemplate {
 public:
  // Parses `source`; a construct outside the supported subset, or a syntax error, throws
  // InputError naming `where` (the file and key it came from), the line and the construct.
  // `variables` are passed to every rendering besides messages (the special tokens:
  // bos_token, eos_token, ...).
  ChatTemplate(const std::string& source, std::string where, Dict variables);

  // The prompt for `messages` (a list of {role, content, ...} dicts), with the assistant's
  // opening appended when `add_generation_prompt`. The template's raise_exception() throws
  // RaisedException with its message; any other failure TemplateError naming the line.
  std::string render(const Value& messages, bool add_generation_prompt) const;

  const std::string& where() const { return where_; }
  const std::string& source() const { return source_; }

 private:
  std::shared_ptr<const Body> body_;
  std::string source_;
  std::string where_;
  Dict variables_;
};

// A JSON value as the Python object json.loads gives (objects keep their key order).
Value value_from_json(const nlohmann::ordered_json& j);

}  // namespace h2oflex::chat_template
