#include "experiments/eval/perplexity.h"

#include <cmath>

#include "runtime/core/error.h"

namespace h2oflex::eval {

WindowShape resolve_window_shape(std::optional<int64_t> window, std::optional<int64_t> stride,
                                 int64_t max_positions, const std::string& window_name,
                                 const std::string& stride_name) {
  const int64_t w = window.value_or(max_positions - 1);
  H2OFLEX_INPUT_CHECK(w >= 1, window_name, " ", w, " must be at least 1");
  H2OFLEX_INPUT_CHECK(w + 1 <= max_positions, window_name, " ", w,
                      " + the BOS exceeds the model's ", max_positions, " positions");
  const int64_t s = stride.value_or(w);
  H2OFLEX_INPUT_CHECK(s >= 1 && s <= w, stride_name, " ", s, " must be in [1, ", window_name, " ",
                      w, "]");
  return {static_cast<int>(w), static_cast<int>(s)};
}

std::vector<Window> plan_windows(size_t tokens, int window, int stride) {
  H2OFLEX_INPUT_CHECK(tokens > 0, "the text has no tokens");
  H2OFLEX_INPUT_CHECK(window >= 1, "--window ", window, " must be at least 1");
  H2OFLEX_INPUT_CHECK(stride >= 1 && stride <= window, "--stride ", stride,
                      " must be in [1, --window ", window, "]");
  std::vector<Window> w;
  size_t reached = 0;
  for (size_t begin = 0; reached < tokens; begin += static_cast<size_t>(stride)) {
    const size_t end = std::min(tokens, begin + static_cast<size_t>(window));
    w.push_back({begin, end, reached});
    reached = end;
  }
  return w;
}

PerplexityResult text_perplexity(const std::vector<int32_t>& tokens, int32_t bos, int window,
                                 int stride, const policy::KvPolicy& kv,
                                 generate::BlockEngine& engine, ContextReading reading) {
  PerplexityResult r;
  r.windows = plan_windows(tokens.size(), window, stride);
  std::vector<ScoredSequence> seqs;
  for (const Window& w : r.windows) {
    ScoredSequence s;
    s.ids.push_back(bos);
    s.ids.insert(s.ids.end(), tokens.begin() + static_cast<std::ptrdiff_t>(w.begin),
                 tokens.begin() + static_cast<std::ptrdiff_t>(w.end));
    s.first_scored = 1 + (w.scored_from - w.begin);
    seqs.push_back(std::move(s));
  }
  const std::vector<SequenceScore> scores = score_sequences(seqs, kv, engine, reading);
  double sum = 0;
  for (const SequenceScore& s : scores) {
    r.nll.insert(r.nll.end(), s.nll.begin(), s.nll.end());
    r.rules.push_back(s.rule);
  }
  for (double x : r.nll) sum += x;
  r.nll_mean = sum / static_cast<double>(r.nll.size());
  r.perplexity = std::exp(r.nll_mean);
  return r;
}

}  // namespace h2oflex::eval
