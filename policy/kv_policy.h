// The KV eviction policy: the `kv:` section as the user writes it (KvPolicy), and the rule the
// engine runs on (KvRule), which is data — what scores a slot, how decode updates the scores,
// which slots are protected and how many there are. full, h2o, streaming, tova, snapkv and random
// are rows of one table (kv_policy.cc), so adding a policy is adding a row; a policy that needs a
// new prefill statistic or victim scope adds that enum value and the one op that computes it.
#pragma once

#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace h2oflex {

// What ranks a slot against the others when one must go.
enum class SlotScore {
  None,       // nothing is ranked: the full cache never evicts
  Attention,  // attention probability the token received (H2O, TOVA)
  Position,   // the token's position: the oldest unprotected token goes first (StreamingLLM)
  Random,     // a fixed pseudo-random draw per position (the `random` control)
};

// The statistic prefill computes to start the attention scores and to pick the prompt's kept
// tokens, [b, kv_heads, s] either way.
enum class PrefillStat {
  None,          // no statistic (position scores need none)
  ColumnSum,     // Σ over all real queries i of softmax P[i, j] (ops::attention_prefill's colsum)
  WindowPooled,  // Σ over the last `recent` queries, max-pooled (ops::window_attention_scores)
};

// How a decode step changes the attention scores of the kept slots.
enum class DecodeUpdate {
  None,        // scores stay (position scores)
  Accumulate,  // the new query's probabilities are added (H2O)
  Replace,     // the new query's probabilities replace them (TOVA)
};

// Which slots compete for one eviction: each (sequence, head) on its own, or a layer's heads
// together — their scores are averaged over the heads (ops::average_over_heads) before prefill
// selection and before each eviction, so every head keeps the same positions in the same slots
// and evicts the same one (TOVA's one kept set per layer).
enum class VictimScope {
  PerHead,
  Layer,
};

// The engine's rule, resolved for one prompt length. Every (sequence, layer, head) keeps at most
// sinks + heavy + recent slots: the first `sinks` real tokens (score +inf, never evicted), the
// `recent` most recent real tokens, and `heavy` more chosen by `score`.
struct KvRule {
  std::string policy = "full";  // the table row it came from (names results and messages)
  SlotScore score = SlotScore::None;
  PrefillStat prefill = PrefillStat::None;
  DecodeUpdate update = DecodeUpdate::None;
  VictimScope scope = VictimScope::PerHead;
  int sinks = 0;   // first real tokens, never evicted
  int heavy = 0;   // slots chosen by score among the others
  int recent = 0;  // protected recent window (SnapKV: its observation window)
  // Selects once, at prefill, and keeps every generated token (SnapKV): the prompt's budget is
  // sinks + heavy + recent and the cache grows by one slot per step.
  bool prefill_only = false;
  // SnapKV's 1-D max pooling of its window scores (odd: centred on the key).
  static constexpr int kWindowPool = 5;

  bool evicts() const { return score != SlotScore::None; }
  // Decode computes slot probabilities only when they change the scores.
  bool decode_scores() const { return update != DecodeUpdate::None; }
  // The score of the token at padded position `position` where it does not come from attention:
  // the position itself (Position), the draw (Random), else 0.
  float fixed_score(int32_t position) const;
  // Prefill computes the column sums and decode the slot probabilities only when this holds.
  bool uses_attention_scores() const { return score == SlotScore::Attention; }
  // Slots per (sequence, layer, head) for a padded prompt of `prompt_len` and `gen_len` new tokens.
  int capacity(int prompt_len, int gen_len) const {
    if (!evicts()) return prompt_len + gen_len;
    return sinks + heavy + recent + (prefill_only ? gen_len : 0);
  }
  const std::string& name() const { return policy; }
};

namespace policy {

// The `kv:` section as written. A count is given as a ratio of the prompt or as tokens (tokens
// win); which counts a policy takes is its table row's business (kv_policy.cc).
struct KvPolicy {
  std::string policy = "full";
  double heavy_ratio = 0, recent_ratio = 0;
  int heavy_tokens = 0, recent_tokens = 0, sink_tokens = 0;

  // The engine's rule for a padded prompt of `prompt_len` tokens followed by `gen_len` new ones.
  // Ratios are of the prompt: H = max(1, floor(heavy_ratio * prompt_len)), likewise R.
  KvRule resolve(int prompt_len, int gen_len) const;
  // Slots not in the recent window (sinks + heavy), the recent window, and their sum B; for a
  // policy that never evicts B is kUnbounded.
  int heavy(int prompt_len) const;
  int recent(int prompt_len) const;
  int budget(int prompt_len) const;
  bool bounded() const;
  // "full", "h2o:0.1,0.1", "h2o:51 tokens,0.1", "streaming:4,60".
  std::string summary() const;

  static constexpr int kUnbounded = 1 << 30;
};

// The names of the table's policies, in table order ("full", "h2o", ...).
std::vector<std::string> kv_policy_names();

// The rule of a table policy with its counts given directly rather than as ratios; throws
// InputError when the policy is unknown or does not take a non-zero count.
KvRule kv_rule(const std::string& policy, int sinks, int heavy, int recent);

// The `kv:` mapping. `path` is its key path in messages ("kv", "rows[3].config.kv"); unknown
// keys, wrong types, out-of-range values and keys the policy does not take throw InputError
// naming the key and, where the node came from a file, its line.
KvPolicy parse_kv_policy(const YAML::Node& node, const std::string& path = "kv");
// The command-line form: "full", "h2o:0.1,0.1" (ratios), "h2o:51,51" (token counts: integers
// > 1 are tokens), "streaming:4,60" (sink, recent). Same rules as the mapping.
KvPolicy parse_kv_spec(const std::string& spec);

}  // namespace policy
}  // namespace h2oflex
