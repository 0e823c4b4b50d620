// A SentencePiece tokenizer from GGUF metadata (`tokenizer.ggml.model` llama): tokens with their
// scores and types, written as the Hugging Face tokenizer.json that stands for it, so that the
// engine's BPE pipeline (models/tokenizer) runs it as it runs a Llama-2 tokenizer.json.
//
// llama.cpp's SentencePiece tokenizer merges, again and again, the adjacent pair whose
// concatenation is a token with the best score. The same result comes from BPE with one merge
// per way of cutting a token into two tokens, ranked by the joined token's score; transformers
// builds a GGUF's tokenizer so (generate_merges), and so does this file, in the same order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/gguf/gguf_file.h"

namespace h2oflex {

// The merges of a SentencePiece vocabulary, best first: for every token, each cut into a left
// and a right part that are both tokens (cuts between code points), ranked by the token's score
// (higher first), then longer left part, then longer right part, ties kept in token order and,
// within a token, by the ids of its parts.
std::vector<std::pair<std::string, std::string>> sentencepiece_merges(
    const std::vector<std::string>& tokens, const std::vector<double>& scores);

// tokenizer.json for `tokenizer.ggml.model` llama: BPE with byte fallback (`<0xNN>` tokens) and
// the merges above; a Metaspace pre-tokenizer ("▁" for spaces, and before the text unless
// `tokenizer.ggml.add_space_prefix` is false); control (3) and unknown (2) tokens special added
// tokens, user-defined (4) ones plain added tokens; the decoder back to text. `types` holds
// llama.cpp's token types, one per token.
nlohmann::json sentencepiece_tokenizer_json(const GgufFile& file,
                                            const std::vector<std::string>& tokens,
                                            const std::vector<int64_t>& types);

}  // namespace h2oflex
