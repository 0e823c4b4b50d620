#include "experiments/generate/prepared_request.h"

#include "runtime/core/error.h"

namespace h2oflex::generate {

std::vector<PreparedRequest> prepare_requests(const std::vector<GenerateRequest>& requests,
                                              const BpeTokenizer& tokenizer,
                                              const RequestDefaults& defaults,
                                              int64_t max_positions,
                                              std::vector<LineError>& errors) {
  std::vector<PreparedRequest> out;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const GenerateRequest& r = requests[i];
    PreparedRequest p;
    p.index = i;
    p.prompt_ids = tokenizer.encode(r.prompt, /*add_bos=*/true, &p.dropped_bytes);
    p.max_new_tokens = r.max_new_tokens.value_or(defaults.max_new_tokens);
    p.temperature = r.temperature.value_or(defaults.temperature);
    p.top_p = p.temperature > 0 ? r.top_p.value_or(defaults.top_p) : 1.0f;
    const int64_t n = static_cast<int64_t>(p.prompt_ids.size());
    if (n >= max_positions) {
      errors.push_back(
          LineError{r.line, r.id,
                    detail::concat("prompt is ", n, " tokens, longer than the model's context of ",
                                   max_positions, " positions")});
      continue;
    }
    if (n + p.max_new_tokens > max_positions) {
      errors.push_back(LineError{
          r.line, r.id,
          detail::concat("prompt (", n, " tokens) + max_new_tokens (", p.max_new_tokens,
                         ") exceeds the model's context of ", max_positions, " positions")});
      continue;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace h2oflex::generate
