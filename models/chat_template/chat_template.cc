#include "models/chat_template/chat_template.h"

#include "models/chat_template/template_error.h"
#include "models/chat_template/template_parser.h"
#include "models/chat_template/template_renderer.h"
#include "runtime/core/error.h"

namespace h2oflex::chat_template {

ChatTemplate::ChatTemplate(const std::string& source, std::string where, Dict variables)
    : source_(source), where_(std::move(where)), variables_(std::move(variables)) {
  try {
    body_ = std::make_shared<const Body>(parse_template(source));
  } catch (const TemplateError& e) {
    throw InputError("chat template " + where_ + ", " + e.what());
  }
}

std::string ChatTemplate::render(const Value& messages, bool add_generation_prompt) const {
  Dict vars = variables_;
  // As transformers passes them: no tools and no documents are None, not undefined.
  vars.emplace_back("messages", messages);
  vars.emplace_back("tools", Value::none());
  vars.emplace_back("documents", Value::none());
  vars.emplace_back("add_generation_prompt", Value::boolean(add_generation_prompt));
  return render_template(*body_, vars);
}

Value value_from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::integer(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value::real(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& item : j) items.push_back(value_from_json(item));
      return Value::of_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict members;
      for (const auto& [key, item] : j.items()) members.emplace_back(key, value_from_json(item));
      return Value::of_dict(std::move(members));
    }
    default:
      return Value::none();
  }
}

}  // namespace h2oflex::chat_template
