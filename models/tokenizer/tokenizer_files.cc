#include "models/tokenizer/tokenizer_files.h"

#include <limits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "models/tokenizer/json_fields.h"
#include "models/tokenizer/pipeline_json.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex::tokenizer {
namespace {

using nlohmann::json;

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

std::vector<AddedToken> parse_added_tokens(const json& list, const JsonWhere& where) {
  std::vector<AddedToken> added;
  if (list.is_null()) return added;
  if (!list.is_array()) where.fail("expected an array, got " + shown(list));
  for (size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    const JsonWhere at = where.at(i);
    H2OFLEX_INPUT_CHECK(t.is_object() && t.contains("id") && t.contains("content"), at.str(),
                        ": needs 'id' and 'content'");
    H2OFLEX_INPUT_CHECK(t["id"].is_number_integer() && t["id"].get<int64_t>() >= 0 &&
                            t["id"].get<int64_t>() <= std::numeric_limits<int32_t>::max(),
                        at.str(), ": bad id");
    H2OFLEX_INPUT_CHECK(t["content"].is_string() && !t["content"].get<std::string>().empty(),
                        at.str(), ": content must be a non-empty string");
    AddedToken token{t["id"].get<int32_t>(), t["content"].get<std::string>(),
                     bool_field(t, "special", false, at)};
    token.single_word = bool_field(t, "single_word", false, at);
    token.lstrip = bool_field(t, "lstrip", false, at);
    token.rstrip = bool_field(t, "rstrip", false, at);
    // Hugging Face's default: special tokens are matched in the raw text, others after
    // normalization.
    token.normalized = bool_field(t, "normalized", !token.special, at);
    added.push_back(std::move(token));
  }
  return added;
}

void read_model(const json& model, const JsonWhere& where, TokenizerFiles& files) {
  if (!model.is_object()) where.fail("missing object 'model'");
  const json& type = field(model, "type");
  if (!type.is_null() && type != "BPE") {
    where.at("type").fail("unsupported model type " + shown(type) + " (only BPE is implemented)");
  }
  const json& dropout = field(model, "dropout");
  if (!dropout.is_null() && !(dropout.is_number() && dropout.get<double>() == 0.0)) {
    where.at("dropout").fail("BPE dropout is not supported (expected null)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = field(model, key);
    if (!v.is_null() && v != "") where.at(key).fail("not supported (expected null)");
  }
  files.ignore_merges = bool_field(model, "ignore_merges", false, where);
  files.byte_fallback = bool_field(model, "byte_fallback", false, where);
  files.fuse_unk = bool_field(model, "fuse_unk", false, where);
  if (!field(model, "unk_token").is_null()) {
    files.unk_token = string_field(model, "unk_token", where);
  }
  files.vocab = parse_vocab(field(model, "vocab"), where.at("vocab").str());

  const json& merges = field(model, "merges");
  H2OFLEX_INPUT_CHECK(merges.is_array(), where.at("merges").str(), " must be an array");
  files.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    // "FILE model.merges[N]", the form the merge checks name it by.
    std::string at = detail::concat("tokenizer file ", where.file, " model.merges[", i, "]");
    const json& m = merges[i];
    if (m.is_string()) {
      files.merges.push_back(parse_merge_line(m.get<std::string>(), std::move(at)));
    } else {
      H2OFLEX_INPUT_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), at,
                          ": a merge must be \"a b\" or [\"a\", \"b\"]");
      files.merges.push_back({m[0].get<std::string>(), m[1].get<std::string>(), std::move(at)});
    }
  }
}

// The first setting that GPT-2's byte-level BPE does not have, or "".
std::string first_non_gpt2_key(const json& root, const TokenizerFiles& files) {
  if (!field(root, "normalizer").is_null()) return "normalizer";
  const json& pre = field(root, "pre_tokenizer");
  if (field(pre, "type") != "ByteLevel" || field(pre, "use_regex") == false) return "pre_tokenizer";
  if (files.ignore_merges) return "model.ignore_merges";
  if (files.byte_fallback) return "model.byte_fallback";
  const json& decoder = field(root, "decoder");
  if (!decoder.is_null() && field(decoder, "type") != "ByteLevel") return "decoder";
  return "";
}

}  // namespace

TokenizerFiles read_vocab_merges(const std::filesystem::path& vocab_file,
                                 const std::filesystem::path& merges_file) {
  TokenizerFiles files;
  files.vocab_source = vocab_file.string();
  files.vocab = parse_vocab(read_json_file(vocab_file), "tokenizer file " + vocab_file.string());

  const std::string text = read_text_file(merges_file);
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
  files.pre_tokenizer.push_back({PreTokenizerStep::Kind::kGpt2Split, nullptr, "", {}, true});
  files.decoder.push_back({DecoderStep::Kind::kByteLevel, "", "", 0, 0, false});
  return files;
}

TokenizerFiles read_tokenizer_json(const std::filesystem::path& file) {
  return parse_tokenizer_json(read_json_file(file), file.string());
}

TokenizerFiles parse_tokenizer_json(const json& root, const std::string& source) {
  const JsonWhere top{source, ""};
  H2OFLEX_INPUT_CHECK(root.is_object(), top.str(), ": top level is not an object");
  for (const char* key : {"truncation", "padding"}) {
    if (!field(root, key).is_null()) top.at(key).fail("not supported (expected null)");
  }
  TokenizerFiles files;
  files.vocab_source = source;
  read_model(field(root, "model"), top.at("model"), files);
  files.added = parse_added_tokens(field(root, "added_tokens"), top.at("added_tokens"));
  files.normalizer = parse_normalizer(field(root, "normalizer"), top.at("normalizer"));
  PreTokenizerSpec pre = parse_pre_tokenizer(field(root, "pre_tokenizer"), top.at("pre_tokenizer"));
  files.pre_tokenizer = std::move(pre.steps);
  files.byte_level = pre.byte_level;
  files.decoder = parse_decoder(field(root, "decoder"), top.at("decoder"));
  const TemplateSpec tmpl =
      parse_post_processor(field(root, "post_processor"), top.at("post_processor"));
  files.has_template = tmpl.present;
  files.template_prefix = tmpl.prefix;
  files.template_suffix = tmpl.suffix;
  files.not_gpt2_key = first_non_gpt2_key(root, files);
  return files;
}

}  // namespace h2oflex::tokenizer
