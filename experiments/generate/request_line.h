// One line of a generate job's input: a request in the plain format
//   {"id", "prompt" (a string, or a list of token ids), "max_new_tokens"?, "temperature"?,
//   "top_p"?, "stop"?, "seed"?,
//    "logit_bias"?, "presence_penalty"?}
// or in the OpenAI batch-file format for completions
//   {"custom_id", "method"?, "url"?, "body": {"prompt", "model"?, "max_tokens"?,
//    "temperature"?, "top_p"?, "stop"?, "n"?: 1, "seed"?, "logit_bias"?, "presence_penalty"?}};
// a chat request has "messages" ([{"role", "content"}, ...]) in place of "prompt", in either
// format (the batch line's url is then "/v1/chat/completions").
// Any other field is refused, naming it: one the engine does not honour must not pass silently.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace h2oflex::generate {

struct GenerateRequest {
  std::string id;      // "id", or "custom_id" in the batch format; integer ids become their digits
  std::string prompt;  // empty for a chat request or a token-id prompt
  // A prompt given as token ids ("prompt": [ids]): the engine reads exactly these (no BOS added).
  std::optional<std::vector<int32_t>> prompt_ids;
  // A chat request's conversation, each message an object with string "role" and "content"
  // (other keys kept for the template); rendered with the model's chat template.
  std::optional<nlohmann::ordered_json> messages;
  std::optional<int> max_new_tokens;  // absent: the run config's gen_len
  std::optional<float> temperature;   // absent: the run config's temperature
  std::optional<float> top_p;         // absent: the run config's top_p
  std::vector<std::string> stop;      // the text is cut before the first of these
  std::optional<uint64_t> seed;       // its own sampling stream (absent: one from its id)
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, bias in [-100, 100])
  std::optional<float> presence_penalty;              // in [-2, 2]
  int64_t line = 0;                                   // 1-based line number in the input file
  bool numeric_id = false;  // the id was written as an integer (42, not "42")
};

// A line that is not a valid request: why, and its id when one could be read.
struct LineError {
  int64_t line = 0;
  std::string id;
  std::string reason;
};

struct ParsedLine {
  std::optional<GenerateRequest> request;
  std::optional<LineError> error;
};

// Parses one input line (without its newline). Never throws for bad content: every problem
// becomes a LineError naming the offending field.
ParsedLine parse_request_line(std::string_view text, int64_t line);

}  // namespace h2oflex::generate
