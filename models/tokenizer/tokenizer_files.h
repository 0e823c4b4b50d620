// Reading tokenizer files: GPT-2 style vocab.json + merges.txt, or Hugging Face tokenizer.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/tokenizer/pipeline.h"

namespace h2oflex::tokenizer {

// A token matched verbatim in input text before pre-tokenization (Hugging Face "added token").
struct AddedToken {
  int32_t id;
  std::string content;
  bool special;  // dropped by decode(..., skip_special = true)
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  // Matched in the normalized text (its content normalized too) rather than in the raw text.
  bool normalized = false;
};

// One merge rule "left right"; its rank is its index in TokenizerFiles::merges.
struct MergeRule {
  std::string left;
  std::string right;
  std::string where;  // "FILE line N" or "FILE model.merges[N]", for error messages
};

// The contents of the tokenizer files, parsed but not yet checked against each other.
struct TokenizerFiles {
  std::vector<std::pair<std::string, int32_t>> vocab;  // token text -> id
  std::vector<MergeRule> merges;
  std::vector<AddedToken> added;
  std::string vocab_source;  // the file the vocabulary came from, for error messages

  // The processing around the model; read_vocab_merges() gives GPT-2's.
  std::vector<NormalizerStep> normalizer;
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::vector<DecoderStep> decoder;
  // The model works on GPT-2 byte symbols (a ByteLevel pre-tokenizer), else on characters.
  bool byte_level = true;
  bool ignore_merges = false;  // a piece that is itself a token is not merged
  bool byte_fallback = false;  // a character missing from the vocabulary -> its "<0xXX>" tokens
  bool fuse_unk = false;       // consecutive unknown characters -> one unk token
  std::optional<std::string> unk_token;

  // post_processor (TemplateProcessing): the ids put before and after the text, when given.
  bool has_template = false;
  std::vector<int32_t> template_prefix;
  std::vector<int32_t> template_suffix;

  // The first key (e.g. "normalizer") that makes this not plain GPT-2 byte-level BPE, or empty.
  std::string not_gpt2_key;
};

// The tokens OPT's tokenizer registers as special (added) tokens. vocab.json + merges.txt carry
// no such list, so read_vocab_merges() uses these (when present in the vocabulary).
inline constexpr const char* kOptPadToken = "<pad>";
inline constexpr const char* kOptEosToken = "</s>";

// vocab.json: a JSON object {token: id}. merges.txt: "left right" per line, an optional
// "#version" first line. Throws InputError naming the file on a missing file or bad content.
TokenizerFiles read_vocab_merges(const std::filesystem::path& vocab_file,
                                 const std::filesystem::path& merges_file);

// tokenizer.json as written by Hugging Face `tokenizers`: a BPE model (model.vocab, model.merges
// as "a b" strings or ["a", "b"] pairs, byte_fallback, fuse_unk, ignore_merges, unk_token),
// added_tokens, and the normalizer, pre_tokenizer, decoder and post_processor steps listed in
// pipeline.h. Anything else is rejected with InputError naming the file and the key.
TokenizerFiles read_tokenizer_json(const std::filesystem::path& file);
// The same from a parsed document; `source` names it in messages (a file, or where the document
// was built from, e.g. a GGUF file's metadata).
TokenizerFiles parse_tokenizer_json(const nlohmann::json& root, const std::string& source);

}  // namespace h2oflex::tokenizer
