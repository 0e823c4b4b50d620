// Perplexity of a text under a KV policy: the text's tokens cut into windows of at most
// `window` tokens that start every `stride` tokens (Hugging Face's sliding-window convention:
// a window scores only the tokens the previous one did not reach, so every token is scored
// once, and with a stride below the window it is predicted from a longer context). Each window
// is the BOS followed by its tokens, streamed through the policy token by token.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/eval/token_scorer.h"

namespace h2oflex::eval {

struct Window {
  size_t begin = 0, end = 0;  // text tokens [begin, end)
  size_t scored_from = 0;     // tokens [scored_from, end) are scored here
};

// InputError when there are no tokens or window / stride are out of range (stride <= window).
std::vector<Window> plan_windows(size_t tokens, int window, int stride);

struct PerplexityResult {
  std::vector<double> nll;  // per text token, in text order
  std::vector<Window> windows;
  std::vector<KvRule> rules;  // per window
  double nll_mean = 0, perplexity = 0;
};

PerplexityResult text_perplexity(const std::vector<int32_t>& tokens, int32_t bos, int window,
                                 int stride, const policy::KvPolicy& kv,
                                 generate::BlockEngine& engine,
                                 ContextReading reading = ContextReading::Stream);

}  // namespace h2oflex::eval
