// GPT-2 byte-level BPE tokenizer with OPT's conventions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace h2oflex {

// Encodes text to token ids and back exactly as Hugging Face's GPT2Tokenizer does for OPT:
// the GPT-2 pre-tokenization pattern, byte-level symbols, BPE merges applied by rank, special
// (added) tokens matched verbatim inside the text, and `</s>` (id 2 for OPT) prepended as BOS.
// No EOS is appended. Any byte string can be encoded, including invalid UTF-8.
//
// Cheap to copy (the tables are shared and immutable); encode/decode are safe to call from
// several threads at once.
class BpeTokenizer {
 public:
  // Loads dir/tokenizer.json if it exists, else dir/vocab.json + dir/merges.txt.
  static BpeTokenizer load(const std::filesystem::path& dir);
  static BpeTokenizer load_tokenizer_json(const std::filesystem::path& file);
  // Special tokens are OPT's: "<pad>" and "</s>".
  static BpeTokenizer load_vocab_merges(const std::filesystem::path& vocab_file,
                                        const std::filesystem::path& merges_file);

  std::vector<int32_t> encode(std::string_view text, bool add_bos = true) const;

  // Concatenated token bytes; invalid UTF-8 (e.g. a character cut between tokens) becomes U+FFFD,
  // so the result is always valid UTF-8. Ids that name no token are ignored (as Hugging Face
  // does; a model's embedding table may be larger than its vocabulary).
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
  // The same bytes without the U+FFFD repair: lossless, e.g. for streaming token by token.
  std::string decode_bytes(std::span<const int32_t> ids, bool skip_special = true) const;

  int32_t bos_id() const;  // "</s>"
  int32_t eos_id() const;  // "</s>"
  int32_t pad_id() const;  // "<pad>"
  // One past the largest id; ids below it may still be unused.
  size_t vocab_size() const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  bool is_special(int32_t id) const;

 private:
  struct Tables;
  explicit BpeTokenizer(std::shared_ptr<const Tables> tables);
  std::shared_ptr<const Tables> tables_;
};

}  // namespace h2oflex
