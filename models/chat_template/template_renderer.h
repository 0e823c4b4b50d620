// Renders parsed template statements with jinja2's semantics: a for-loop's body runs in a scope
// of its own each iteration (a `set` there is gone after it, hence namespace()), `if` opens no
// scope, undefined names print as nothing but fail when used as a value.
#pragma once

#include <string>

#include "models/chat_template/template_ast.h"

namespace h2oflex::chat_template {

// Throws TemplateError naming the line for a failure, RaisedException for raise_exception().
std::string render_template(const Body& body, const Dict& variables);

}  // namespace h2oflex::chat_template
