#include "models/tokenizer/tokenizer_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex::tokenizer {
namespace {

using nlohmann::json;

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.is_open(), "tokenizer file ", file.string(),
                      ": cannot open: ", std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  H2OFLEX_INPUT_CHECK(!in.bad(), "tokenizer file ", file.string(), ": read failed");
  return buf.str();
}

json parse_json(const std::filesystem::path& file) {
  const std::string text = read_file(file);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(
        detail::concat("tokenizer file ", file.string(), ": malformed JSON: ", e.what()));
  }
}

// Reads {token: id, ...}; ids must be distinct non-negative 32-bit integers.
std::vector<std::pair<std::string, int32_t>> parse_vocab(const json& vocab,
                                                         const std::string& where) {
  H2OFLEX_INPUT_CHECK(vocab.is_object(), where, ": the vocabulary must be a JSON object");
  std::vector<std::pair<std::string, int32_t>> out;
  out.reserve(vocab.size());
  std::unordered_map<int64_t, std::string> seen;
  for (const auto& [token, id] : vocab.items()) {
    H2OFLEX_INPUT_CHECK(id.is_number_integer(), where, ": id of token ", quote_excerpt(token),
                        " is not an integer");
    const int64_t value = id.get<int64_t>();
    H2OFLEX_INPUT_CHECK(value >= 0 && value <= std::numeric_limits<int32_t>::max(), where, ": id ",
                        value, " of token ", quote_excerpt(token), " is out of range");
    const auto [it, fresh] = seen.emplace(value, token);
    H2OFLEX_INPUT_CHECK(fresh, where, ": id ", value, " is used by both ",
                        quote_excerpt(it->second), " and ", quote_excerpt(token));
    out.emplace_back(token, static_cast<int32_t>(value));
  }
  return out;
}

// "left right" -> MergeRule; exactly one space separates the two parts.
MergeRule parse_merge_line(std::string_view line, std::string where) {
  const size_t space = line.find(' ');
  H2OFLEX_INPUT_CHECK(space != std::string_view::npos && space > 0 && space + 1 < line.size() &&
                          line.find(' ', space + 1) == std::string_view::npos,
                      where, ": a merge must be two tokens separated by one space, got ",
                      quote_excerpt(line));
  return {std::string(line.substr(0, space)), std::string(line.substr(space + 1)),
          std::move(where)};
}

std::vector<AddedToken> opt_added_tokens(
    const std::vector<std::pair<std::string, int32_t>>& vocab) {
  std::vector<AddedToken> added;
  for (const auto& [token, id] : vocab) {
    if (token == kOptPadToken || token == kOptEosToken) added.push_back({id, token, true});
  }
  return added;
}

// The value at key, or null when absent.
const json& field(const json& object, const char* key) {
  static const json null_value;
  const auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

void check_supported(const json& root, const std::string& file) {
  const auto unsupported = [&](const std::string& what) {
    throw InputError(detail::concat("tokenizer file ", file, ": unsupported setting ", what,
                                    " (only GPT-2 byte-level BPE is implemented)"));
  };
  H2OFLEX_INPUT_CHECK(root.is_object(), "tokenizer file ", file, ": top level is not an object");
  const json& model = field(root, "model");
  H2OFLEX_INPUT_CHECK(model.is_object(), "tokenizer file ", file, ": missing object 'model'");
  const json& type = field(model, "type");
  if (!type.is_null() && type != "BPE") unsupported("model.type=" + type.dump());
  if (!field(model, "dropout").is_null()) unsupported("model.dropout");
  for (const char* key : {"ignore_merges", "byte_fallback"}) {
    if (field(model, key) == true) unsupported(std::string("model.") + key);
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = field(model, key);
    if (!v.is_null() && v != "") unsupported(std::string("model.") + key);
  }
  if (!field(root, "normalizer").is_null()) unsupported("normalizer");
  const json& pre = field(root, "pre_tokenizer");
  if (!pre.is_object() || field(pre, "type") != "ByteLevel") {
    unsupported("pre_tokenizer (want ByteLevel)");
  }
  if (field(pre, "add_prefix_space") == true) unsupported("pre_tokenizer.add_prefix_space=true");
  if (field(pre, "use_regex") == false) unsupported("pre_tokenizer.use_regex=false");
}

std::vector<AddedToken> parse_added_tokens(const json& list, const std::string& file) {
  std::vector<AddedToken> added;
  if (list.is_null()) return added;
  H2OFLEX_INPUT_CHECK(list.is_array(), "tokenizer file ", file, ": added_tokens is not an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    const std::string where = detail::concat("tokenizer file ", file, ": added_tokens[", i, "]");
    H2OFLEX_INPUT_CHECK(t.is_object() && t.contains("id") && t.contains("content"), where,
                        ": needs 'id' and 'content'");
    H2OFLEX_INPUT_CHECK(t["id"].is_number_integer() && t["id"].get<int64_t>() >= 0 &&
                            t["id"].get<int64_t>() <= std::numeric_limits<int32_t>::max(),
                        where, ": bad id");
    H2OFLEX_INPUT_CHECK(t["content"].is_string() && !t["content"].get<std::string>().empty(), where,
                        ": content must be a non-empty string");
    for (const char* key : {"lstrip", "rstrip", "single_word"}) {
      H2OFLEX_INPUT_CHECK(field(t, key) != true, where, ": unsupported setting ", key, "=true");
    }
    added.push_back(
        {t["id"].get<int32_t>(), t["content"].get<std::string>(), field(t, "special") == true});
  }
  return added;
}

}  // namespace

TokenizerFiles read_vocab_merges(const std::filesystem::path& vocab_file,
                                 const std::filesystem::path& merges_file) {
  TokenizerFiles files;
  files.vocab_source = vocab_file.string();
  files.vocab = parse_vocab(parse_json(vocab_file), "tokenizer file " + vocab_file.string());

  const std::string text = read_file(merges_file);
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    files.merges.push_back(parse_merge_line(
        line, detail::concat("tokenizer file ", merges_file.string(), " line ", line_no)));
  }
  files.added = opt_added_tokens(files.vocab);
  return files;
}

TokenizerFiles read_tokenizer_json(const std::filesystem::path& file) {
  const json root = parse_json(file);
  const std::string name = file.string();
  check_supported(root, name);
  const json& model = root["model"];

  TokenizerFiles files;
  files.vocab_source = name;
  files.vocab = parse_vocab(field(model, "vocab"), "tokenizer file " + name + ": model.vocab");

  const json& merges = field(model, "merges");
  H2OFLEX_INPUT_CHECK(merges.is_array(), "tokenizer file ", name,
                      ": model.merges must be an array");
  files.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    std::string where = detail::concat("tokenizer file ", name, " model.merges[", i, "]");
    const json& m = merges[i];
    if (m.is_string()) {
      files.merges.push_back(parse_merge_line(m.get<std::string>(), std::move(where)));
    } else {
      H2OFLEX_INPUT_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
                          where, ": a merge must be \"a b\" or [\"a\", \"b\"]");
      files.merges.push_back({m[0].get<std::string>(), m[1].get<std::string>(), std::move(where)});
    }
  }
  files.added = parse_added_tokens(field(root, "added_tokens"), name);
  return files;
}

}  // namespace h2oflex::tokenizer
