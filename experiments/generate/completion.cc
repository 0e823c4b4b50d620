#include "experiments/generate/completion.h"

#include <algorithm>

#include "models/tokenizer/utf8.h"

namespace h2oflex::generate {

Completion finish_completion(const BpeTokenizer& tokenizer, std::span<const int32_t> generated,
                             int max_new_tokens, int32_t eos_id,
                             const std::vector<std::string>& stop) {
  Completion c;
  c.finish_reason = "length";
  const size_t limit = std::min(generated.size(), static_cast<size_t>(std::max(0, max_new_tokens)));
  size_t longest_stop = 0;
  for (const auto& s : stop) longest_stop = std::max(longest_stop, s.size());

  // Byte-level BPE decodes token by token: the text is the concatenation of each id's bytes.
  std::string bytes;
  size_t used = 0;
  for (; used < limit; ++used) {
    const int32_t id = generated[used];
    if (id == eos_id) {
      ++used;  // EOS was generated and counts
      c.finish_reason = "stop";
      break;
    }
    const size_t before = bytes.size();
    bytes += tokenizer.decode_bytes(std::span<const int32_t>(&generated[used], 1));
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
