// A request made ready for the engine: prompt tokenized, defaults filled in, context checked.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/generate/request_line.h"
#include "models/chat_template/chat_template.h"
#include "models/tokenizer/bpe_tokenizer.h"

namespace h2oflex::generate {

struct RequestDefaults {
  int max_new_tokens = 32;
  float temperature = 0.0f;
  float top_p = 1.0f;
};

struct PreparedRequest {
  size_t index = 0;                 // into the job's request list
  std::vector<int32_t> prompt_ids;  // BOS included (for a chat request, as its template writes it)
  size_t dropped_bytes = 0;         // of the prompt, which the vocabulary cannot spell
  int max_new_tokens = 0;
  float temperature = 0.0f;  // 0 = greedy
  float top_p = 1.0f;        // 1 when greedy (it has no effect there)
};

// Tokenizes every request; a chat request's messages are first rendered with `chat` (with the
// generation prompt), and the text tokenized without adding special tokens, as transformers'
// apply_chat_template does (the template writes BOS itself). One whose prompt plus
// max_new_tokens does not fit the model's `max_positions`, or whose conversation the template
// rejects (raise_exception), becomes a LineError appended to `errors` instead. A chat request
// with `chat` null is an InputError naming its line: the model has no chat template.
std::vector<PreparedRequest> prepare_requests(const std::vector<GenerateRequest>& requests,
                                              const BpeTokenizer& tokenizer,
                                              const chat_template::ChatTemplate* chat,
                                              const RequestDefaults& defaults,
                                              int64_t max_positions,
                                              std::vector<LineError>& errors);

}  // namespace h2oflex::generate
