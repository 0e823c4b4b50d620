// Parses a chat template into statements, with jinja2's grammar and operator precedence. Every
// construct outside the supported subset (macros, includes, unknown filters or tests, ...) is a
// TemplateError naming it and its line, so nothing is rendered with a template half understood.
#pragma once

#include <string_view>

#include "models/chat_template/template_ast.h"

namespace h2oflex::chat_template {

Body parse_template(std::string_view source);

}  // namespace h2oflex::chat_template
