#include "experiments/generate/completion.h"

#include <algorithm>

#include "models/tokenizer/utf8.h"

namespace h2oflex::generate {

Completion finish_completion(const BpeTokenizer& tokenizer, std::span<const int32_t> generated,
                             int max_new_tokens, const std::vector<int32_t>& stop_ids,
                             const std::vector<std::string>& stop) {
  Completion c;
  c.finish_reason = "length";
  const size_t limit = std::min(generated.size(), static_cast<size_t>(std::max(0, max_new_tokens)));
  size_t longest_stop = 0;
  for (const auto& s : stop) longest_stop = std::max(longest_stop, s.size());

  // The text so far is decoded as a whole at every step: a decoder may depend on where a token
  // stands (SentencePiece's leading-space strip applies to the first token only), and each
  // step's text extends the previous one.
  std::string bytes;
  size_t used = 0;
  for (; used < limit; ++used) {
    const int32_t id = generated[used];
    if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
      ++used;  // EOS was generated and counts
      c.finish_reason = "stop";
      break;
    }
    const size_t before = bytes.size();
    bytes = tokenizer.decode_bytes(generated.subspan(0, used + 1));
    if (stop.empty()) continue;
    // A stop string that just appeared must overlap the new bytes: search only that window.
    const size_t from = before >= longest_stop ? before - longest_stop + 1 : 0;
    size_t cut = std::string::npos;
    for (const auto& s : stop) cut = std::min(cut, bytes.find(s, from));
    if (cut != std::string::npos) {
      bytes.resize(cut);
      ++used;
      c.finish_reason = "stop";
      break;
    }
  }
  c.completion_tokens = static_cast<int>(used);
  c.text = tokenizer::to_valid_utf8(bytes);
  return c;
}

}  // namespace h2oflex::generate
