// KV eviction rules as "score + protected ranges + budget" (STYLE.md lesson 5).
//
// Every rule keeps at most `budget()` slots per (sequence, layer, head) and protects the `recent`
// most recent real tokens. What differs is the score that decides among the rest:
//   full       never evicts (budget = prompt + generated);
//   h2o        accumulated attention probability (heavy hitters win);
//   streaming  position-based: the first `heavy` real tokens ("attention sinks") score +inf and the
//              others their position, so the oldest non-sink token goes first.
#pragma once

#include <string>

namespace h2oflex {

struct EvictionRule {
  enum class Kind { Full, H2O, Streaming };
  Kind kind = Kind::Full;
  int heavy = 0;   // heavy hitters (h2o) or sink tokens (streaming)
  int recent = 0;  // protected recent window

  bool evicts() const { return kind != Kind::Full; }
  bool uses_attention_scores() const { return kind == Kind::H2O; }
  // Slots per (sequence, layer, head) for a padded prompt of `prompt_len` and `gen_len` new tokens.
  int capacity(int prompt_len, int gen_len) const {
    return evicts() ? heavy + recent : prompt_len + gen_len;
  }
  std::string name() const;
};

}  // namespace h2oflex
