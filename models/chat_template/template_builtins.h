// The filters, tests, methods and global functions a chat template may use. The parser refuses
// any other name with these lists, so a template either renders as jinja2 renders it or is
// refused before any work.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "models/chat_template/template_value.h"

namespace h2oflex::chat_template {

using Kwargs = std::vector<std::pair<std::string, Value>>;

bool is_supported_filter(const std::string& name);
bool is_supported_test(const std::string& name);
// Methods of str and dict (as the sandbox allows them): strip, startswith, items, get, ...
bool is_supported_method(const std::string& name);
// raise_exception, namespace, range.
bool is_supported_function(const std::string& name);

// value | name(args, kwargs). Throws RenderFailure as Python would raise.
Value apply_filter(const std::string& name, const Value& value, const std::vector<Value>& args,
                   const Kwargs& kwargs);
// value is name(args).
bool apply_test(const std::string& name, const Value& value, const std::vector<Value>& args);
// object.name(args).
Value call_method(const Value& object, const std::string& name, const std::vector<Value>& args);
// name(args, kwargs) for namespace and range; raise_exception throws RaisedException.
Value call_function(const std::string& name, const std::vector<Value>& args, const Kwargs& kwargs);

// Python's str.strip(), lstrip(), rstrip() on whitespace (str.isspace()).
std::string strip_whitespace(const std::string& s, bool left, bool right);

}  // namespace h2oflex::chat_template
