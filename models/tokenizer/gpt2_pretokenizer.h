// GPT-2 pre-tokenization: splits text into the pieces that BPE then encodes one by one.
#pragma once

#include <string_view>
#include <vector>

namespace h2oflex::tokenizer {

// Splits text exactly as the GPT-2 pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// does when applied repeatedly from left to right. The pieces are views into `text` and
// concatenate back to it. Bytes that are not well-formed UTF-8 count as one "other" character
// each, so any byte string is accepted.
std::vector<std::string_view> split_gpt2(std::string_view text);

}  // namespace h2oflex::tokenizer
