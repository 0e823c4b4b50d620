#include "models/gguf/gguf_tokenizer.h"

#include <string>
#include <vector>

#include "models/chat_template/model_chat_template.h"
#include "models/gguf/gguf_spm_tokenizer.h"
#include "models/tokenizer/special_token_config.h"
#include "models/tokenizer/tokenizer_files.h"
#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex {
namespace {

using nlohmann::json;

using namespace gguf_token_type;

json byte_level() {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", true},
          {"use_regex", true}};
}

// The pre-tokenizer of each `tokenizer.ggml.pre` value read, as llama.cpp defines it: "default"
// and "gpt-2" are GPT-2's ByteLevel split; "smollm" splits every digit off first (as SmolLM2's
// own tokenizer.json does).
std::optional<json> pre_tokenizer(const std::string& pre) {
  if (pre == "default" || pre == "gpt-2") return byte_level();
  if (pre == "smollm") {
    return json{
        {"type", "Sequence"},
        {"pretokenizers",
         json::array({json{{"type", "Digits"}, {"individual_digits", true}}, byte_level()})}};
  }
  return std::nullopt;
}

std::string source_of(const GgufFile& file) {
  return detail::concat("'", file.path().string(), "' metadata (tokenizer.ggml.*)");
}

struct TokenList {
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
};

TokenList token_list(const GgufFile& file) {
  const std::string model = file.string("tokenizer.ggml.model");
  if (model != "gpt2" && model != "llama") {
    file.key_error("tokenizer.ggml.model",
                   "is '" + model +
                       "'; the tokenizers read from GGUF metadata are byte-level BPE ('gpt2') and "
                       "SentencePiece ('llama')");
  }
  TokenList list{file.strings("tokenizer.ggml.tokens"), {}};
  if (file.find("tokenizer.ggml.token_type")) {
    list.types = file.integers("tokenizer.ggml.token_type");
    if (list.types.size() != list.tokens.size()) {
      file.key_error("tokenizer.ggml.token_type",
                     detail::concat("has ", list.types.size(), " entries for ", list.tokens.size(),
                                    " tokens"));
    }
  } else {
    list.types.assign(list.tokens.size(), kNormal);
  }
  return list;
}

}  // namespace

json gguf_tokenizer_json(const GgufFile& file) {
  const TokenList list = token_list(file);
  if (file.string("tokenizer.ggml.model") == "llama") {
    return sentencepiece_tokenizer_json(file, list.tokens, list.types);
  }
  const std::string pre =
      file.find("tokenizer.ggml.pre") ? file.string("tokenizer.ggml.pre") : "default";
  const std::optional<json> pre_steps = pre_tokenizer(pre);
  if (!pre_steps) {
    file.key_error("tokenizer.ggml.pre",
                   "is '" + pre + "'; the pre-tokenizers read are default, gpt-2 and smollm");
  }
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < list.tokens.size(); ++id) {
    vocab[list.tokens[id]] = id;
    const int64_t type = list.types[id];
    if (type == kControl || type == kUserDefined) {
      added.push_back({{"id", id},
                       {"content", list.tokens[id]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", type != kControl},
                       {"special", type == kControl}});
    } else if (type != kNormal) {
      file.key_error(
          "tokenizer.ggml.token_type",
          detail::concat("gives token ", id, " (", quote_excerpt(list.tokens[id]), ") type ", type,
                         "; a byte-level BPE's tokens are normal (1), control (3) or "
                         "user-defined (4)"));
    }
  }
  if (vocab.size() != list.tokens.size()) {
    file.key_error("tokenizer.ggml.tokens", "holds a token twice");
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", *pre_steps},
          {"post_processor",
           {{"type", "ByteLevel"},
            {"add_prefix_space", true},
            {"trim_offsets", false},
            {"use_regex", true}}},
          {"decoder",
           {{"type", "ByteLevel"},
            {"add_prefix_space", true},
            {"trim_offsets", true},
            {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", file.strings("tokenizer.ggml.merges")}}}};
}

json gguf_tokenizer_config_json(const GgufFile& file) {
  const TokenList list = token_list(file);
  json config = json::object();
  const std::pair<const char*, const char*> named[] = {{"bos", "bos_token"},
                                                       {"eos", "eos_token"},
                                                       {"unknown", "unk_token"},
                                                       {"padding", "pad_token"}};
  for (const auto& [gguf_key, hf_key] : named) {
    const std::string key = std::string("tokenizer.ggml.") + gguf_key + "_token_id";
    if (file.find(key) == nullptr) continue;
    const uint64_t id = file.uint(key);
    if (id >= list.tokens.size()) {
      file.key_error(key, detail::concat("is ", id, ", past the token list (", list.tokens.size(),
                                         " tokens)"));
    }
    config[hf_key] = list.tokens[id];
  }
  for (const char* flag : {"add_bos_token", "add_eos_token"}) {
    const std::string key = std::string("tokenizer.ggml.") + flag;
    if (file.find(key)) config[flag] = file.boolean(key);
  }
  // llama.cpp puts a BOS before a SentencePiece vocabulary's text unless the file says not to
  // (files older than the key say nothing); transformers does the same.
  if (file.string("tokenizer.ggml.model") == "llama" && !config.contains("add_bos_token") &&
      config.contains("bos_token")) {
    config["add_bos_token"] = true;
  }
  if (file.find("tokenizer.chat_template")) {
    config["chat_template"] = file.string("tokenizer.chat_template");
  }
  return config;
}

BpeTokenizer load_gguf_tokenizer(const GgufFile& file) {
  const std::string source = source_of(file);
  tokenizer::SpecialTokenConfig special;
  tokenizer::read_tokenizer_config_keys(gguf_tokenizer_config_json(file), source, special);
  return BpeTokenizer::from_parts(
      tokenizer::parse_tokenizer_json(gguf_tokenizer_json(file), source), special);
}

std::optional<chat_template::ChatTemplate> load_gguf_chat_template(const GgufFile& file) {
  if (file.find("tokenizer.chat_template") == nullptr) return std::nullopt;
  tokenizer::SpecialTokenConfig special;
  tokenizer::read_tokenizer_config_keys(gguf_tokenizer_config_json(file), source_of(file), special);
  return chat_template::ChatTemplate(
      file.string("tokenizer.chat_template"),
      detail::concat("'", file.path().string(), "' metadata key 'tokenizer.chat_template'"),
      chat_template::special_token_variables(special));
}

}  // namespace h2oflex
