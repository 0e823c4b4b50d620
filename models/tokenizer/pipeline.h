// The text-processing stages around a BPE model, as tokenizer.json describes them: normalizer,
// pre-tokenizer and decoder. Each stage is a list of steps run in order.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/tokenizer/regex_split.h"

namespace h2oflex::tokenizer {

// One normalizer step, applied to each stretch of text between added tokens.
struct NormalizerStep {
  enum class Kind {
    kNfc,      // Unicode NFC
    kPrepend,  // put `text` in front of a non-empty string (SentencePiece's "▁")
    kReplace,  // replace every occurrence of `text` with `replacement`
  };
  Kind kind;
  std::string text;
  std::string replacement;
};

// One pre-tokenizer step, applied to every piece the previous step produced.
struct PreTokenizerStep {
  enum class Kind {
    kRegexSplit,  // cut at the matches of `regex`, keeping them as pieces (Split, Isolated)
    kGpt2Split,   // cut with GPT-2's pattern (ByteLevel with use_regex)
    kMetaspace,   // spaces become `replacement`, which is prepended per `prepend`, then cut
    kDigits,      // numeric characters (\p{N}) cut out: each alone when `split`, else in runs
  };
  enum class Prepend { kAlways, kFirst, kNever };
  Kind kind;
  std::shared_ptr<const RegexSplitter> regex;
  std::string replacement;
  Prepend prepend = Prepend::kNever;
  bool split = true;  // kMetaspace: a new piece starts at each replacement; kDigits: see above
};

// One decoder step, applied to the list of token strings.
struct DecoderStep {
  enum class Kind {
    kByteLevel,     // GPT-2 byte symbols back to bytes; all tokens become one
    kReplace,       // `text` -> `replacement` in every token
    kByteFallback,  // runs of "<0xXX>" tokens become the text of their bytes
    kFuse,          // all tokens become one
    kStrip,         // drop up to `start` leading and `stop` trailing `text` characters per token
    kMetaspace,     // `text` -> " ", dropped in the first token when `strip_first`
  };
  Kind kind;
  std::string text;
  std::string replacement;
  size_t start = 0;
  size_t stop = 0;
  bool strip_first = false;
};

// A piece of text on its way through the pre-tokenizer. `at_start`: the piece begins where the
// input text begins (Metaspace's "first" prepend scheme only prepends to such a piece).
struct Piece {
  std::string text;
  bool at_start;
};

std::string normalize(const std::vector<NormalizerStep>& steps, std::string_view text);

// Appends the pieces of `text` (one piece when there are no steps).
void pre_tokenize(const std::vector<PreTokenizerStep>& steps, std::string_view text, bool at_start,
                  std::vector<Piece>& out);

// Runs the decoder on token strings and joins what is left. Without steps the tokens are joined
// with spaces, as Hugging Face does. `lossy`: invalid UTF-8 from byte tokens becomes U+FFFD the
// way Hugging Face replaces it; otherwise the bytes are kept as they are.
std::string decode_tokens(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens,
                          bool lossy);

}  // namespace h2oflex::tokenizer
