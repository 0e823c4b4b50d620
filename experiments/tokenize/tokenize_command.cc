#include "experiments/tokenize/tokenize_command.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "experiments/common/job_config.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "runtime/core/error.h"

namespace h2oflex {

namespace {

using nlohmann::json;

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

std::string type_name(const json& value) {
  return value.type_name();
}

// The value a line holds under `key`; InputError naming `where` when the line is not a JSON
// object with that key and no other than `also_allowed` (nullptr for none).
json line_value(const std::string& text, const std::string& where, const char* key,
                const char* shape, const char* also_allowed = nullptr) {
  json line;
  try {
    line = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(detail::concat(where, ": invalid JSON (", e.what(), "); expected ", shape));
  }
  H2OFLEX_INPUT_CHECK(line.is_object(), where, ": expected ", shape, ", got a JSON ",
                      type_name(line));
  for (const auto& item : line.items()) {
    H2OFLEX_INPUT_CHECK(item.key() == key || (also_allowed && item.key() == also_allowed), where,
                        ": unknown key '", item.key(), "' (expected ", shape, ")");
  }
  H2OFLEX_INPUT_CHECK(line.contains(key), where, ": no '", key, "' (expected ", shape, ")");
  return line[key];
}

std::string encode_line(const BpeTokenizer& tokenizer, const std::string& text,
                        const std::string& where, bool no_special, size_t& dropped_total) {
  const json value = line_value(text, where, "text", "{\"text\": \"...\"}");
  H2OFLEX_INPUT_CHECK(value.is_string(), where, ": 'text' must be a string, got a JSON ",
                      type_name(value));
  size_t dropped = 0;
  const std::vector<int32_t> ids =
      tokenizer.encode(value.get_ref<const std::string&>(), !no_special, &dropped);
  dropped_total += dropped;
  nlohmann::ordered_json out;
  out["ids"] = ids;
  if (dropped > 0) out["dropped_bytes"] = dropped;
  return out.dump();
}

std::string decode_line(const BpeTokenizer& tokenizer, const std::string& text,
                        const std::string& where, bool no_special) {
  // What encoding wrote can be decoded as it is: its dropped_bytes is allowed (and unused).
  const json value = line_value(text, where, "ids", "{\"ids\": [...]}", "dropped_bytes");
  H2OFLEX_INPUT_CHECK(value.is_array(), where, ": 'ids' must be an array, got a JSON ",
                      type_name(value));
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const json& id = value[i];
    H2OFLEX_INPUT_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 &&
                            id.get<int64_t>() <= std::numeric_limits<int32_t>::max(),
                        where, ": ids[", i, "] must be an integer from 0 to ",
                        std::numeric_limits<int32_t>::max(), ", got ", id.dump());
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  nlohmann::ordered_json out;
  out["text"] = tokenizer.decode(ids, /*skip_special=*/no_special);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

CLI::App* add_tokenize_subcommand(CLI::App& app, TokenizeOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "the token ids the engine reads for each text, through the model's own tokenizer (or, "
      "with --decode, the text of each id list); JSONL in, JSONL on stdout");
  cmd->add_option("--model", options.model_dir,
                  "model directory holding the tokenizer files (tokenizer.json, or vocab.json + "
                  "merges.txt), or a GGUF file (its tokenizer metadata)")
      ->required();
  cmd->add_option("--input", options.input,
                  "one JSON per line: {\"text\": ...}, or {\"ids\": [...]} with --decode; blank "
                  "lines are skipped")
      ->required();
  cmd->add_flag("--decode", options.decode, "ids to text instead of text to ids");
  cmd->add_flag("--no-special", options.no_special,
                "encode without the special tokens the model puts around a text (BOS / EOS); "
                "decode without special tokens");
  return cmd;
}

int run_tokenize(const TokenizeOptions& o) {
  H2OFLEX_INPUT_CHECK(!std::filesystem::is_directory(o.input), "--input '", o.input,
                      "' is a directory");
  std::ifstream in(o.input, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "--input: cannot read '", o.input, "': ", std::strerror(errno));
  const BpeTokenizer tokenizer = load_job_tokenizer(o.model_dir, "tokenize");

  std::vector<std::string> out;
  size_t dropped = 0, lines_dropping = 0;
  std::string text;
  for (int64_t line = 1; std::getline(in, text); ++line) {
    if (line == 1 && text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // UTF-8 BOM
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (is_blank(text)) continue;
    const std::string where = detail::concat("--input '", o.input, "' line ", line);
    if (o.decode) {
      out.push_back(decode_line(tokenizer, text, where, o.no_special));
    } else {
      const size_t before = dropped;
      out.push_back(encode_line(tokenizer, text, where, o.no_special, dropped));
      lines_dropping += dropped > before;
    }
  }
  if (!in.eof()) {
    throw IoError(
        detail::concat("--input: reading '", o.input, "' failed: ", std::strerror(errno)));
  }

  for (const std::string& s : out) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fputc('\n', stdout);
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    throw IoError(detail::concat("tokenize: writing to stdout failed: ", std::strerror(errno)));
  }
  if (dropped > 0) {
    std::fprintf(stderr,
                 "tokenize: %zu byte(s) on %zu line(s) dropped: the vocabulary has no token for "
                 "them (see each line's dropped_bytes)\n",
                 dropped, lines_dropping);
  }
  return 0;
}

}  // namespace h2oflex
