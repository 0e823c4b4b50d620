#include "models/tokenizer/special_token_config.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "models/tokenizer/json_fields.h"

namespace h2oflex::tokenizer {
namespace {

using nlohmann::json;

void read_named(const json& root, const char* key, const JsonWhere& file, NamedToken& out) {
  if (!root.contains(key)) return;
  const json& v = root[key];
  const JsonWhere where = file.at(key);
  out.given = true;
  out.where = where.str();
  if (v.is_null()) {
    out.name.reset();
  } else if (v.is_string()) {
    out.name = v.get<std::string>();
  } else if (v.is_object()) {
    out.name = string_field(v, "content", where);
  } else {
    where.fail("expected a token string, an object with \"content\", or null, got " + shown(v));
  }
}

int32_t token_id(const json& v, const JsonWhere& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
      v.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
    where.fail("expected a non-negative token id, got " + shown(v));
  }
  return v.get<int32_t>();
}

// An id or a list of ids; null or absent gives none.
std::vector<int32_t> token_ids(const json& root, const char* key, const JsonWhere& file) {
  const json& v = field(root, key);
  const JsonWhere where = file.at(key);
  std::vector<int32_t> out;
  if (v.is_null()) return out;
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) out.push_back(token_id(v[i], where.at(i)));
  } else {
    out.push_back(token_id(v, where));
  }
  return out;
}

std::optional<json> read_if_present(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return std::nullopt;
  json root = read_json_file(file);
  if (!root.is_object()) JsonWhere{file.string(), ""}.fail("top level is not an object");
  return root;
}

void read_token_names(const json& root, const JsonWhere& where, SpecialTokenConfig& out) {
  read_named(root, "bos_token", where, out.bos);
  read_named(root, "eos_token", where, out.eos);
  read_named(root, "pad_token", where, out.pad);
  read_named(root, "unk_token", where, out.unk);
}

}  // namespace

void read_tokenizer_config_keys(const json& root, const std::string& source,
                                SpecialTokenConfig& out) {
  const JsonWhere where{source, ""};
  read_token_names(root, where, out);
  if (!field(root, "add_bos_token").is_null()) {
    out.add_bos = bool_field(root, "add_bos_token", false, where);
    out.add_bos_where = where.at("add_bos_token").str();
  }
  if (!field(root, "add_eos_token").is_null()) {
    out.add_eos = bool_field(root, "add_eos_token", false, where);
    out.add_eos_where = where.at("add_eos_token").str();
  }
}

SpecialTokenConfig read_special_token_config(const std::filesystem::path& dir) {
  SpecialTokenConfig out;
  // special_tokens_map.json first, so that tokenizer_config.json's keys override it.
  for (const char* name : {"special_tokens_map.json", "tokenizer_config.json"}) {
    const std::filesystem::path file = dir / name;
    const std::optional<json> root = read_if_present(file);
    if (!root) continue;
    if (std::string(name) == "tokenizer_config.json") {
      read_tokenizer_config_keys(*root, file.string(), out);
    } else {
      read_token_names(*root, {file.string(), ""}, out);
    }
  }
  const std::filesystem::path generation_file = dir / "generation_config.json";
  if (const std::optional<json> root = read_if_present(generation_file)) {
    out.has_generation_config = true;
    out.generation_eos_ids = token_ids(*root, "eos_token_id", {generation_file.string(), ""});
  }
  const std::filesystem::path config_file = dir / "config.json";
  if (const std::optional<json> root = read_if_present(config_file)) {
    const JsonWhere where{config_file.string(), ""};
    const std::vector<int32_t> bos = token_ids(*root, "bos_token_id", where);
    if (!bos.empty()) out.config_bos_id = bos.front();
    out.config_eos_ids = token_ids(*root, "eos_token_id", where);
    const std::vector<int32_t> pad = token_ids(*root, "pad_token_id", where);
    if (!pad.empty()) out.config_pad_id = pad.front();
  }
  return out;
}

}  // namespace h2oflex::tokenizer
