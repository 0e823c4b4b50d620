#include "models/chat_template/model_chat_template.h"

#include <nlohmann/json.hpp>

#include "models/tokenizer/json_fields.h"
#include "models/tokenizer/special_token_config.h"

namespace h2oflex::chat_template {

namespace {

namespace fs = std::filesystem;
using tokenizer::JsonWhere;

}  // namespace

Dict special_token_variables(const tokenizer::SpecialTokenConfig& config) {
  Dict vars;
  const std::pair<const char*, const tokenizer::NamedToken*> named[] = {{"bos_token", &config.bos},
                                                                        {"eos_token", &config.eos},
                                                                        {"unk_token", &config.unk},
                                                                        {"pad_token", &config.pad}};
  for (const auto& [key, token] : named) {
    if (token->given && token->name) vars.emplace_back(key, Value::string(*token->name));
  }
  return vars;
}

namespace {

// tokenizer_config.json's chat_template: the text and where it is, or nullopt.
std::optional<std::pair<std::string, std::string>> config_template(const fs::path& file) {
  if (!fs::exists(file)) return std::nullopt;
  const nlohmann::json root = tokenizer::read_json_file(file);
  const nlohmann::json& value = tokenizer::field(root, "chat_template");
  const JsonWhere where{file.string(), "chat_template"};
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return std::make_pair(value.get<std::string>(), where.str());
  if (!value.is_array()) {
    where.fail("expected a template string or a list of {name, template}, got " +
               tokenizer::shown(value));
  }
  for (size_t k = 0; k < value.size(); ++k) {
    const JsonWhere at = where.at(k);
    if (!value[k].is_object())
      at.fail("expected {name, template}, got " + tokenizer::shown(value[k]));
    if (tokenizer::string_field(value[k], "name", at) == "default") {
      return std::make_pair(tokenizer::string_field(value[k], "template", at),
                            at.at("template").str());
    }
  }
  where.fail("the list of chat templates has none named \"default\"");
}

}  // namespace

std::optional<ChatTemplate> load_model_chat_template(const fs::path& dir) {
  std::optional<std::pair<std::string, std::string>> found;
  // As transformers: a chat_template.jinja file replaces tokenizer_config.json's template.
  const fs::path jinja = dir / "chat_template.jinja";
  if (fs::exists(jinja)) {
    found = std::make_pair(tokenizer::read_text_file(jinja), "file " + jinja.string());
  } else {
    found = config_template(dir / "tokenizer_config.json");
  }
  if (!found) return std::nullopt;
  return ChatTemplate(found->first, found->second,
                      special_token_variables(tokenizer::read_special_token_config(dir)));
}

}  // namespace h2oflex::chat_template
