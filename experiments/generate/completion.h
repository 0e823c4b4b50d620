// Turns a request's generated ids into its result: text, token count and finish reason.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex::generate {

struct Completion {
  std::string text;           // valid UTF-8, without EOS and without the stop string
  int completion_tokens = 0;  // tokens the request consumed (EOS, or the token completing a
                              // stop string, included)
  std::string finish_reason;  // "stop" (EOS or a stop string) or "length"
};

// `generated` may run past the request's own limit (a block decodes to its largest
// max_new_tokens): only the first `max_new_tokens` ids count. The text ends before the earliest
// stop string that appears in it, and the count covers the tokens up to the one that completed
// that stop string, as if generation had halted there. Any of `stop_ids` (the model's EOS and
// its other end-of-turn ids; empty to run on) ends the completion and counts as a token.
Completion finish_completion(const BpeTokenizer& tokenizer, std::span<const int32_t> generated,
                             int max_new_tokens, const std::vector<int32_t>& stop_ids,
                             const std::vector<std::string>& stop);

}  // namespace h2oflex::generate
