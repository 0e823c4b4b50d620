#include "models/loaders/hf_json.h"

#include <fstream>
#include <sstream>

namespace h2oflex {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json_object(const fs::path& path, fs::path* file_read) {
  const fs::path file = fs::is_directory(path) ? path / "config.json" : path;
  if (file_read != nullptr) *file_read = file;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(detail::concat("'", file.string(), "': cannot open config"));
  std::ostringstream text;
  text << in.rdbuf();
  json doc;
  try {
    doc = json::parse(text.str());
  } catch (const json::exception& e) {
    throw InputError(detail::concat("'", file.string(), "': malformed JSON: ", e.what()));
  }
  if (!doc.is_object()) {
    throw InputError(detail::concat("'", file.string(), "': config is not a JSON object"));
  }
  return doc;
}

InputError KeyReader::error(const char* key, std::string_view why) const {
  return InputError(detail::concat("'", file_.string(), "': key \"", path_of(key), "\" ", why));
}

KeyReader KeyReader::object(const char* key) const {
  if (!has(key) || !doc_[key].is_object()) throw error(key, "must be an object");
  return KeyReader(doc_[key], file_, path_of(key));
}

int64_t KeyReader::positive_int(const char* key) const {
  if (!has(key)) throw error(key, "is missing");
  const json& v = doc_[key];
  if (!v.is_number_integer()) throw error(key, "must be an integer, got " + v.dump());
  const int64_t n = v.get<int64_t>();
  if (n <= 0) throw error(key, "must be positive, got " + v.dump());
  return n;
}

void KeyReader::optional_positive_int(const char* key, int64_t& out) const {
  if (has(key)) out = positive_int(key);
}

void KeyReader::optional_token_id(const char* key, int32_t& out) const {
  if (!has(key)) return;
  const json& v = doc_[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
    throw error(key, "must be a non-negative integer token id, got " + v.dump());
  }
  out = v.get<int32_t>();
}

void KeyReader::optional_bool(const char* key, bool& out) const {
  if (!has(key)) return;
  if (!doc_[key].is_boolean()) throw error(key, "must be true or false, got " + doc_[key].dump());
  out = doc_[key].get<bool>();
}

void KeyReader::optional_string(const char* key, std::string& out) const {
  if (!has(key)) return;
  if (!doc_[key].is_string()) throw error(key, "must be a string, got " + doc_[key].dump());
  out = doc_[key].get<std::string>();
}

double KeyReader::positive_number(const char* key) const {
  const double x = number_in(key, 0, std::numeric_limits<double>::max());
  if (!(x > 0)) throw error(key, "must be positive, got " + doc_[key].dump());
  return x;
}

void KeyReader::optional_positive_number(const char* key, double& out) const {
  if (has(key)) out = positive_number(key);
}

double KeyReader::number_in(const char* key, double lo, double hi) const {
  if (!has(key)) throw error(key, "is missing");
  const json& v = doc_[key];
  if (!v.is_number()) throw error(key, "must be a number, got " + v.dump());
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) {
    throw error(key, detail::concat("must be in [", lo, ", ", hi, "], got ", v.dump()));
  }
  return x;
}

std::string KeyReader::checkpoint_dtype() const {
  const char* key = has("torch_dtype") ? "torch_dtype" : "dtype";
  std::string dtype;
  optional_string(key, dtype);
  if (!dtype.empty() && dtype != "float32" && dtype != "float16" && dtype != "bfloat16") {
    throw error(key, "is '" + dtype + "'; expected float32, float16 or bfloat16");
  }
  return dtype;
}

std::string KeyReader::model_type(const std::string& fallback) const {
  std::string t = fallback;
  optional_string("model_type", t);
  return t;
}

}  // namespace h2oflex
