// Small helpers for reading the tokenizer's JSON files with errors that name file and key.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace h2oflex::tokenizer {

// The file's bytes; InputError naming the file when it cannot be read.
std::string read_text_file(const std::filesystem::path& file);

// The parsed file; InputError naming the file when it is not valid JSON.
nlohmann::json read_json_file(const std::filesystem::path& file);

// The value at key, or null when `object` lacks it (or is not an object).
const nlohmann::json& field(const nlohmann::json& object, const char* key);

// The value as JSON text, quoted and cut short, for messages.
std::string shown(const nlohmann::json& value);

// A JSON location for messages: "tokenizer file FILE: KEY".
struct JsonWhere {
  std::string file;
  std::string key;

  JsonWhere at(const std::string& child) const;  // "key.child"
  JsonWhere at(size_t index) const;              // "key[index]"
  std::string str() const;
  // Throws InputError "tokenizer file FILE: KEY: what".
  [[noreturn]] void fail(const std::string& what) const;
};

// Typed readers of an optional member: absent or null gives the default, another type throws.
bool bool_field(const nlohmann::json& object, const char* key, bool fallback,
                const JsonWhere& where);
std::string string_field(const nlohmann::json& object, const char* key, const JsonWhere& where);

}  // namespace h2oflex::tokenizer
