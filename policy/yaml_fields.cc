#include "policy/yaml_fields.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"

namespace h2oflex::policy {

std::string key_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return "";
  return " (line " + std::to_string(mark.line + 1) + ")";
}

namespace {

std::string scalar_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsMap()) return "<mapping>";
  if (node.IsSequence()) return "<list>";
  return "<null>";
}

[[noreturn]] void type_error(const YAML::Node& node, const std::string& path, const char* type) {
  throw InputError(
      detail::concat(path, ": '", scalar_text(node), "' is not ", type, line_of(node)));
}

}  // namespace

void require_mapping(const YAML::Node& node, const std::string& path) {
  H2OFLEX_INPUT_CHECK(node.IsMap(), path, ": expected a mapping, got '", scalar_text(node), "'",
                      line_of(node));
}

void require_mapping(const YAML::Node& node, const std::string& path,
                     std::initializer_list<const char*> allowed) {
  require_mapping(node, path);
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const bool known =
        std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; });
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      throw InputError(detail::concat(key_path(path, key), ": unknown key", line_of(kv.first),
                                      "; known keys: ", list));
    }
  }
}

double read_double(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a number");
  try {
    return node.as<double>();
  } catch (const YAML::Exception&) {
    type_error(node, path, "a number");
  }
}

int64_t read_int(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "an integer");
  try {
    return node.as<int64_t>();
  } catch (const YAML::Exception&) {
    type_error(node, path, "an integer");
  }
}

bool read_bool(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a boolean (true/false)");
  try {
    return node.as<bool>();
  } catch (const YAML::Exception&) {
    type_error(node, path, "a boolean (true/false)");
  }
}

std::string read_string(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a string");
  return node.Scalar();
}

uint64_t read_byte_size(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) type_error(node, path, "a byte size");
  return parse_byte_size(node.Scalar(), path + line_of(node));
}

}  // namespace h2oflex::policy
