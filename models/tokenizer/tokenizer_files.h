// Reading GPT-2 style tokenizer files (vocab.json + merges.txt, or tokenizer.json).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace h2oflex::tokenizer {

// A token matched verbatim in input text before pre-tokenization (Hugging Face "added token").
struct AddedToken {
  int32_t id;
  std::string content;
  bool special;  // dropped by decode(..., skip_special = true)
};

// One merge rule "left right"; its rank is its index in TokenizerFiles::merges.
struct MergeRule {
  std::string left;
  std::string right;
  std::string where;  // "FILE line N" or "FILE model.merges[N]", for error messages
};

// The contents of the tokenizer files, parsed but not yet checked against each other.
struct TokenizerFiles {
  std::vector<std::pair<std::string, int32_t>> vocab;  // token text (byte symbols) -> id
  std::vector<MergeRule> merges;
  std::vector<AddedToken> added;
  std::string vocab_source;  // the file the vocabulary came from, for error messages
};

// The tokens OPT's tokenizer registers as special (added) tokens. vocab.json + merges.txt carry
// no such list, so read_vocab_merges() uses these (when present in the vocabulary).
inline constexpr const char* kOptPadToken = "<pad>";
inline constexpr const char* kOptEosToken = "</s>";

// vocab.json: a JSON object {token: id}. merges.txt: "left right" per line, an optional
// "#version" first line. Throws InputError naming the file on a missing file or bad content.
TokenizerFiles read_vocab_merges(const std::filesystem::path& vocab_file,
                                 const std::filesystem::path& merges_file);

// tokenizer.json as written by Hugging Face `tokenizers`: model.vocab, model.merges ("a b"
// strings or ["a", "b"] pairs) and added_tokens. Settings this implementation does not follow
// (a normalizer, add_prefix_space, ignore_merges, ...) are rejected with InputError.
TokenizerFiles read_tokenizer_json(const std::filesystem::path& file);

}  // namespace h2oflex::tokenizer
