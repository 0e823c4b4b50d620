// BPE tokenizers as Hugging Face `tokenizers` runs them: GPT-2 / OPT, GPT-NeoX, Llama-3, Qwen2
// (byte-level BPE) and Llama-2 / Mistral (SentencePiece BPE converted to tokenizer.json).
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

namespace tokenizer {
struct TokenizerFiles;
struct SpecialTokenConfig;
}  // namespace tokenizer

// Encodes text to token ids and back exactly as Hugging Face does for the model's files:
// added (special) tokens split out of the text first, then the normalizer, the pre-tokenizer and
// BPE merges by rank, over GPT-2 byte symbols or, for SentencePiece models, over characters with
// "<0xXX>" byte fallback. Any byte string can be encoded, including invalid UTF-8; bytes the
// vocabulary cannot spell are dropped as Hugging Face drops them, and counted (see encode()).
//
// Cheap to copy (the tables are shared and immutable); encode/decode are safe to call from
// several threads at once.
class BpeTokenizer {
 public:
  // GPT-2 byte-level BPE with OPT's conventions: `</s>` (id 2 for OPT) prepended as BOS, no EOS
  // appended, "<pad>" and "</s>" required. load() reads dir/tokenizer.json if it exists, else
  // dir/vocab.json + dir/merges.txt. A tokenizer.json that is not plain GPT-2 byte-level BPE is
  // refused; load_tokenizer() reads those.
  static BpeTokenizer load(const std::filesystem::path& dir);
  static BpeTokenizer load_tokenizer_json(const std::filesystem::path& file);
  static BpeTokenizer load_vocab_merges(const std::filesystem::path& vocab_file,
                                        const std::filesystem::path& merges_file);
  // See load_tokenizer().
  static BpeTokenizer load_model_dir(const std::filesystem::path& model_dir);
  // A tokenizer.json's parsed contents with the special tokens a model directory's other files
  // name (load_model_dir's parts, for tokenizers described elsewhere, e.g. in GGUF metadata).
  static BpeTokenizer from_parts(const tokenizer::TokenizerFiles& files,
                                 const tokenizer::SpecialTokenConfig& config);

  // `add_bos`: put the model's special tokens around the text, as its post-processor or
  // tokenizer_config.json says: bos_to_prepend() before it, eos_to_append() after it.
  // `dropped_bytes`, when given, receives the count of bytes of the text (after the normalizer)
  // that no token stands for: characters (for a byte-level model, bytes) missing from the
  // vocabulary with neither byte fallback nor an unknown token to take their place. Hugging Face
  // drops them the same way, without a word; callers report the count so that no text is lost
  // unseen.
  std::vector<int32_t> encode(std::string_view text, bool add_bos = true,
                              size_t* dropped_bytes = nullptr) const;

  // What Hugging Face's decode gives: valid UTF-8 (broken byte sequences become U+FFFD the way
  // the model's decoder replaces them). Ids that name no token are ignored (as Hugging Face
  // does; a model's embedding table may be larger than its vocabulary).
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
  // The same text without the U+FFFD repair: lossless, e.g. for streaming token by token.
  std::string decode_bytes(std::span<const int32_t> ids, bool skip_special = true) const;

  // The token encode() puts before / after the text, if any.
  std::optional<int32_t> bos_to_prepend() const;
  std::optional<int32_t> eos_to_append() const;
  // The model's BOS, EOS and padding tokens; -1 when it has none.
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t pad_id() const;
  // Ids that end generation: eos_id() and generation_config.json's eos_token_id (one id or a
  // list, as Llama-3 instruct models give). Sorted, without duplicates.
  const std::vector<int32_t>& stop_ids() const;
  // One past the largest id; ids below it may still be unused.
  size_t vocab_size() const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  bool is_special(int32_t id) const;

 private:
  struct Tables;
  explicit BpeTokenizer(std::shared_ptr<const Tables> tables);
  std::string decode_impl(std::span<const int32_t> ids, bool skip_special, bool lossy) const;
  std::shared_ptr<const Tables> tables_;
};

// The tokenizer of a Hugging Face model directory, chosen by the files present:
//   tokenizer.json   any kind above; special tokens from its post_processor and added_tokens,
//                    with tokenizer_config.json / special_tokens_map.json (bos_token, eos_token,
//                    pad_token, add_bos_token, add_eos_token), generation_config.json
//                    (eos_token_id) and config.json (bos/eos/pad_token_id) where present;
//   vocab.json + merges.txt   GPT-2 BPE with OPT's conventions (as BpeTokenizer::load);
//   tokenizer.model only      refused: convert it to tokenizer.json first.
// InputError names the file and key of anything missing or not implemented.
BpeTokenizer load_tokenizer(const std::filesystem::path& model_dir);

}  // namespace h2oflex
