// Reading a Hugging Face config.json key by key: every error names the file and the key (with
// its path inside nested objects, e.g. "rope_scaling.factor") and what was expected.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"

namespace h2oflex {

// The JSON object in `path` (a config.json, or a directory holding one); InputError naming the
// file when it cannot be read, is not JSON, or is not an object.
nlohmann::json read_json_object(const std::filesystem::path& path,
                                std::filesystem::path* file_read = nullptr);

class KeyReader {
 public:
  // `prefix` is the path of `doc` inside the file ("" for the top level).
  KeyReader(const nlohmann::json& doc, std::filesystem::path file, std::string prefix = "")
      : doc_(doc), file_(std::move(file)), prefix_(std::move(prefix)) {}

  // Present and not null.
  bool has(const char* key) const { return doc_.contains(key) && !doc_[key].is_null(); }
  const nlohmann::json& raw(const char* key) const { return doc_[key]; }
  const std::filesystem::path& file() const { return file_; }

  InputError error(const char* key, std::string_view why) const;
  // A reader for the object under `key` (InputError when it is not an object).
  KeyReader object(const char* key) const;

  int64_t positive_int(const char* key) const;
  void optional_positive_int(const char* key, int64_t& out) const;
  void optional_token_id(const char* key, int32_t& out) const;
  void optional_bool(const char* key, bool& out) const;
  void optional_string(const char* key, std::string& out) const;
  double positive_number(const char* key) const;
  void optional_positive_number(const char* key, double& out) const;
  // A number in [lo, hi] (both inclusive).
  double number_in(const char* key, double lo, double hi) const;
  // "torch_dtype" (older transformers) or "dtype" (transformers 5): float32, float16, bfloat16,
  // or "" when absent.
  std::string checkpoint_dtype() const;
  // `model_type`, or `fallback` when absent.
  std::string model_type(const std::string& fallback) const;

 private:
  std::string path_of(const char* key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

  const nlohmann::json& doc_;
  std::filesystem::path file_;
  std::string prefix_;
};

}  // namespace h2oflex
