// Perplexity of a text under a KV policy: the text's tokens cut into windows of at most
// `window` tokens that start every `stride` tokens (Hugging Face's sliding-window convention:
// a window scores only the tokens the previous one did not reach, so every token is scored
// once, and with a stride below the window it is predicted from a longer context). Each window
// is the BOS followed by its tokens, streamed through the policy token by token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/eval/token_scorer.h"

namespace h2oflex::eval {

struct Window {
  size_t begin = 0, end = 0;  // text tokens [begin, end)
  size_t scored_from = 0;     // tokens [scored_from, end) are scored here
};

struct WindowShape {
  int window = 0, stride = 0;
};

// The window and stride of a perplexity run: those given, else the model's context less the BOS
// and the window. InputError naming `window_name` or `stride_name` (the option or suite key) for
// a window below 1 or beyond the context with its BOS, or a stride outside [1, window]; checked
// before any work, and never replaced by a default when a value was given.
WindowShape resolve_window_shape(std::optional<int64_t> window, std::optional<int64_t> stride,
                                 int64_t max_positions, const std::string& window_name,
                                 const std::string& stride_name);

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
