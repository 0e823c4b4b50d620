#include "models/tokenizer/json_fields.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex::tokenizer {

std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.is_open(), "tokenizer file ", file.string(),
                      ": cannot open: ", std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  H2OFLEX_INPUT_CHECK(!in.bad(), "tokenizer file ", file.string(), ": read failed");
  return buf.str();
}

nlohmann::json read_json_file(const std::filesystem::path& file) {
  const std::string text = read_text_file(file);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(
        detail::concat("tokenizer file ", file.string(), ": malformed JSON: ", e.what()));
  }
}

const nlohmann::json& field(const nlohmann::json& object, const char* key) {
  static const nlohmann::json null_value;
  if (!object.is_object()) return null_value;
  const auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

std::string shown(const nlohmann::json& value) {
  return quote_excerpt(value.dump(), 60);
}

JsonWhere JsonWhere::at(const std::string& child) const {
  return {file, key.empty() ? child : key + "." + child};
}

JsonWhere JsonWhere::at(size_t index) const {
  return {file, detail::concat(key, "[", index, "]")};
}

std::string JsonWhere::str() const {
  return key.empty() ? "tokenizer file " + file : "tokenizer file " + file + ": " + key;
}

void JsonWhere::fail(const std::string& what) const {
  throw InputError(str() + ": " + what);
}

bool bool_field(const nlohmann::json& object, const char* key, bool fallback,
                const JsonWhere& where) {
  const nlohmann::json& v = field(object, key);
  if (v.is_null()) return fallback;
  if (!v.is_boolean()) where.at(key).fail("expected true or false, got " + shown(v));
  return v.get<bool>();
}

std::string string_field(const nlohmann::json& object, const char* key, const JsonWhere& where) {
  const nlohmann::json& v = field(object, key);
  if (!v.is_string()) where.at(key).fail("expected a string, got " + shown(v));
  return v.get<std::string>();
}

}  // namespace h2oflex::tokenizer
