// GgufFile's typed metadata getters: a key's value as the type a reader needs, or InputError
// naming the key, its byte offset and its stored type (GgufFile::key_error). Apart from the
// container reader (gguf_file.cc), which they do not need.
#include <cstdint>

#include "models/gguf/gguf_file.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex {

namespace {
const GgufValue& required(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) f.key_error(key, "is missing");
  return *v;
}
}  // namespace

std::string GgufFile::string(std::string_view key) const {
  const GgufValue& v = required(*this, key);
  if (v.type != GgufType::kString) key_error(key, "must be a string");
  return std::get<std::string>(v.value);
}

uint64_t GgufFile::uint(std::string_view key) const {
  const GgufValue& v = required(*this, key);
  if (const auto* u = std::get_if<uint64_t>(&v.value)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v.value); i && *i >= 0) return uint64_t(*i);
  key_error(key, "must be a non-negative integer");
}

double GgufFile::number(std::string_view key) const {
  const GgufValue& v = required(*this, key);
  if (const auto* u = std::get_if<uint64_t>(&v.value)) return double(*u);
  if (const auto* i = std::get_if<int64_t>(&v.value)) return double(*i);
  if (const auto* d = std::get_if<double>(&v.value)) return *d;
  key_error(key, "must be a number");
}

bool GgufFile::boolean(std::string_view key) const {
  const GgufValue& v = required(*this, key);
  if (v.type != GgufType::kBool) key_error(key, "must be a bool");
  return std::get<bool>(v.value);
}

std::vector<std::string> GgufFile::strings(std::string_view key) const {
  const GgufValue& v = required(*this, key);
  if (v.type != GgufType::kArray || v.element_type != GgufType::kString) {
    key_error(key, "must be an array of strings");
  }
  std::vector<std::string> out;
  for (const GgufValue& item : std::get<std::vector<GgufValue>>(v.value)) {
    out.push_back(std::get<std::string>(item.value));
  }
  return out;
}

std::vector<int64_t> GgufFile::integers(std::string_view key) const {
  const GgufValue& v = required(*this, key);
  if (v.type != GgufType::kArray) key_error(key, "must be an array of integers");
  std::vector<int64_t> out;
  for (const GgufValue& item : std::get<std::vector<GgufValue>>(v.value)) {
    if (const auto* u = std::get_if<uint64_t>(&item.value); u && *u <= uint64_t(INT64_MAX)) {
      out.push_back(int64_t(*u));
    } else if (const auto* i = std::get_if<int64_t>(&item.value)) {
      out.push_back(*i);
    } else {
      key_error(key, detail::concat("must be an array of integers (element at byte offset ",
                                    item.offset, " is a ", gguf_type_name(item.type), ")"));
    }
  }
  return out;
}

std::vector<double> GgufFile::numbers(std::string_view key) const {
  const GgufValue& v = required(*this, key);
  if (v.type != GgufType::kArray) key_error(key, "must be an array of numbers");
  std::vector<double> out;
  for (const GgufValue& item : std::get<std::vector<GgufValue>>(v.value)) {
    if (const auto* d = std::get_if<double>(&item.value)) {
      out.push_back(*d);
    } else if (const auto* u = std::get_if<uint64_t>(&item.value); u && item.is_integer()) {
      out.push_back(static_cast<double>(*u));
    } else if (const auto* i = std::get_if<int64_t>(&item.value)) {
      out.push_back(static_cast<double>(*i));
    } else {
      key_error(key, detail::concat("must be an array of numbers (element at byte offset ",
                                    item.offset, " is a ", gguf_type_name(item.type), ")"));
    }
  }
  return out;
}

}  // namespace h2oflex
