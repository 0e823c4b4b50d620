#include "policy/kv_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <optional>
#include <sstream>

#include "policy/yaml_fields.h"
#include "runtime/core/error.h"

namespace h2oflex::policy {

namespace {

// How a policy takes one of its counts.
enum class Count {
  Unused,         // not at all: giving it is an error
  Tokens,         // as a token count only
  RatioOrTokens,  // as a fraction of the prompt or as a token count
};

// One policy: the rule's data and the counts it takes. Every count a policy uses is required.
struct PolicyRow {
  const char* name;
  SlotScore score;
  PrefillStat prefill;
  DecodeUpdate update;
  Count sinks, heavy, recent;
  VictimScope scope = VictimScope::PerHead;
  bool prefill_only = false;
};

// Adding a policy is adding a row. TOVA ranks by the last query's attention alone, averaged
// over the layer's heads (one kept set per layer, as its paper does); its prompt is selected by
// the column sums, the statistic prefill has, averaged the same way.
constexpr PolicyRow kPolicies[] = {
    {"full", SlotScore::None, PrefillStat::None, DecodeUpdate::None, Count::Unused, Count::Unused,
     Count::Unused},
    {"h2o", SlotScore::Attention, PrefillStat::ColumnSum, DecodeUpdate::Accumulate, Count::Unused,
     Count::RatioOrTokens, Count::RatioOrTokens},
    {"streaming", SlotScore::Position, PrefillStat::None, DecodeUpdate::None, Count::Tokens,
     Count::Unused, Count::RatioOrTokens},
    {"tova", SlotScore::Attention, PrefillStat::ColumnSum, DecodeUpdate::Replace, Count::Unused,
     Count::RatioOrTokens, Count::RatioOrTokens, VictimScope::Layer},
    // SnapKV: the prompt's tokens most attended to by its last `recent` queries (pooled), plus
    // those queries' own window, chosen once at prefill; generated tokens are all kept.
    {"snapkv", SlotScore::Attention, PrefillStat::WindowPooled, DecodeUpdate::None, Count::Unused,
     Count::RatioOrTokens, Count::RatioOrTokens, VictimScope::PerHead, true},
    // The control: outside the recent window, which tokens stay is a fixed draw per position
    // (the same in every run, layer and head), unrelated to attention.
    {"random", SlotScore::Random, PrefillStat::None, DecodeUpdate::None, Count::Unused,
     Count::RatioOrTokens, Count::RatioOrTokens},
};

// The `random` policy's draw: splitmix64 of the position and a fixed seed, its top 24 bits as a
// float in [0, 1) (exact in f32, so every device ranks the same).
float random_draw(int32_t position) {
  uint64_t z = static_cast<uint64_t>(static_cast<uint32_t>(position)) + 0x9E3779B97F4A7C15ull * 20;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// The three counts and their keys, in the order the command-line form lists them.
struct CountKeys {
  const char* ratio_key;  // nullptr: no ratio form exists
  const char* tokens_key;
  const char* spec_name;  // in the command-line form's usage
  int min_tokens;         // 0: the count may be zero, written as tokens or as a ratio
  Count PolicyRow::*use;
  double KvPolicy::*ratio;
  int KvPolicy::*tokens;
};
constexpr int kMaxTokens = 1 << 24;
const CountKeys kCounts[] = {
    {nullptr, "sink_tokens", "SINK", 0, &PolicyRow::sinks, nullptr, &KvPolicy::sink_tokens},
    // No heavy slots is the paper's recent-only ("Local") baseline.
    {"heavy_ratio", "heavy_tokens", "HEAVY", 0, &PolicyRow::heavy, &KvPolicy::heavy_ratio,
     &KvPolicy::heavy_tokens},
    {"recent_ratio", "recent_tokens", "RECENT", 1, &PolicyRow::recent, &KvPolicy::recent_ratio,
     &KvPolicy::recent_tokens},
};
enum CountIndex { kSinks = 0, kHeavy = 1, kRecent = 2 };

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string names_list() {
  std::string s;
  for (const PolicyRow& r : kPolicies) s += std::string(s.empty() ? "" : ", ") + r.name;
  return s;
}

const PolicyRow* find_row(const std::string& name) {
  for (const PolicyRow& r : kPolicies) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

const PolicyRow& row_or_throw(const std::string& name) {
  const PolicyRow* row = find_row(name);
  H2OFLEX_INPUT_CHECK(row != nullptr, "kv policy '", name, "' is unknown (", names_list(), ")");
  return *row;
}

// "sink_tokens, recent_tokens" — the keys a policy takes, for messages.
std::string keys_taken(const PolicyRow& row) {
  std::string s;
  for (const CountKeys& c : kCounts) {
    const Count use = row.*c.use;
    if (use == Count::Unused) continue;
    if (!s.empty()) s += ", ";
    s += use == Count::RatioOrTokens ? std::string(c.ratio_key) + " or " + c.tokens_key
                                     : c.tokens_key;
  }
  return s.empty() ? "no counts" : s;
}

// "full, h2o:HEAVY,RECENT, streaming:SINK,RECENT, tova:HEAVY,RECENT, snapkv:HEAVY,RECENT or
// random:HEAVY,RECENT".
std::string spec_usage() {
  std::string s;
  const size_t n = std::size(kPolicies);
  for (size_t i = 0; i < n; ++i) {
    s += i == 0 ? "" : i + 1 == n ? " or " : ", ";
    s += kPolicies[i].name;
    char sep = ':';
    for (const CountKeys& c : kCounts) {
      if (kPolicies[i].*c.use == Count::Unused) continue;
      s += sep;
      s += c.spec_name;
      sep = ',';
    }
  }
  return s;
}

KvRule rule_of(const PolicyRow& row) {
  KvRule r;
  r.policy = row.name;
  r.score = row.score;
  r.prefill = row.prefill;
  r.update = row.update;
  r.scope = row.scope;
  r.prefill_only = row.prefill_only;
  return r;
}

// What either form wrote, before validation. Lines are " (line N)" or "".
struct Given {
  std::optional<double> ratio, tokens;
  std::string ratio_line, tokens_line;
};
struct Written {
  std::string policy = "full", policy_line;
  Given counts[3];
};

// How messages name a key: `prefix` + "kv.heavy_ratio" + ": " + problem + line.
struct Where {
  std::string prefix, path;
  std::string key(const char* k) const { return prefix + key_path(path, k); }
};

// The validation both forms share; returns the policy as written.
KvPolicy build(const Written& w, const Where& at) {
  const PolicyRow* row = find_row(w.policy);
  H2OFLEX_INPUT_CHECK(row != nullptr, at.key("policy"), ": '", w.policy, "' is not a kv policy (",
                      names_list(), ")", w.policy_line);
  KvPolicy kv;
  kv.policy = row->name;
  for (const CountKeys& c : kCounts) {
    const Given& g = w.counts[&c - kCounts];
    const Count use = row->*c.use;
    const auto not_used = [&](const char* key, const std::string& line) {
      throw InputError(detail::concat(at.key(key), ": not used by kv policy '", row->name, "' (",
                                      row->name, " takes ", keys_taken(*row), ")", line));
    };
    if (g.tokens && use == Count::Unused) not_used(c.tokens_key, g.tokens_line);
    if (g.ratio && use != Count::RatioOrTokens) not_used(c.ratio_key, g.ratio_line);
    if (use == Count::Unused) continue;
    H2OFLEX_INPUT_CHECK(!(g.ratio && g.tokens), at.prefix, at.path, ": give ", c.ratio_key, " or ",
                        c.tokens_key, ", not both", g.tokens_line);
    H2OFLEX_INPUT_CHECK(
        g.ratio || g.tokens, at.key(use == Count::RatioOrTokens ? c.ratio_key : c.tokens_key), ": ",
        row->name, " needs ",
        use == Count::RatioOrTokens ? std::string(c.ratio_key) + " or " + c.tokens_key
                                    : std::string(c.tokens_key));
    if (g.ratio) {
      const double v = *g.ratio;
      const bool zero = c.min_tokens == 0;
      H2OFLEX_INPUT_CHECK(std::isfinite(v) && (zero ? v >= 0 : v > 0) && v <= 1,
                          at.key(c.ratio_key), ": ", fmt(v), " is not a fraction of the prompt in ",
                          zero ? "[0, 1]" : "(0, 1]", g.ratio_line);
      kv.*c.ratio = v;
    } else {
      const double v = *g.tokens;
      H2OFLEX_INPUT_CHECK(v >= c.min_tokens && v <= kMaxTokens, at.key(c.tokens_key), ": ",
                          static_cast<int64_t>(v), " must be in [", c.min_tokens, ", ", kMaxTokens,
                          "]", g.tokens_line);
      kv.*c.tokens = static_cast<int>(v);
    }
  }
  // Ratios share one prompt: together they cannot keep more than all of it. Refused, not
  // clamped, so a run never keeps other counts than the ones written.
  const double ratios = kv.heavy_ratio + kv.recent_ratio;
  H2OFLEX_INPUT_CHECK(ratios <= 1 + 1e-12, at.key("heavy_ratio"), " + ",
                      key_path(at.path, "recent_ratio"), ": ", fmt(kv.heavy_ratio), " + ",
                      fmt(kv.recent_ratio), " = ", fmt(ratios), " exceeds 1 (the whole prompt)",
                      w.counts[kHeavy].ratio_line);
  return kv;
}

// A count resolved for a prompt: tokens win; a ratio above 0 keeps at least one token. (A count
// written as 0 tokens or as ratio 0 leaves both fields 0 and resolves to 0.)
int resolve_count(const KvPolicy& kv, const CountKeys& c, Count use, int prompt_len) {
  if (use == Count::Unused) return 0;
  const int tokens = kv.*c.tokens;
  if (use == Count::Tokens || tokens > 0 || kv.*c.ratio == 0) return tokens;
  return std::max(1, static_cast<int>(std::floor(kv.*c.ratio * prompt_len)));
}

}  // namespace

KvRule KvPolicy::resolve(int prompt_len, int gen_len) const {
  H2OFLEX_CHECK(prompt_len >= 1 && gen_len >= 0, "KvPolicy::resolve: prompt ", prompt_len, ", gen ",
                gen_len);
  const PolicyRow& row = row_or_throw(policy);
  KvRule r = rule_of(row);
  r.sinks = resolve_count(*this, kCounts[kSinks], row.sinks, prompt_len);
  r.heavy = resolve_count(*this, kCounts[kHeavy], row.heavy, prompt_len);
  r.recent = resolve_count(*this, kCounts[kRecent], row.recent, prompt_len);
  return r;
}

int KvPolicy::heavy(int prompt_len) const {
  const KvRule r = resolve(prompt_len, 0);
  return r.sinks + r.heavy;
}

int KvPolicy::recent(int prompt_len) const {
  return resolve(prompt_len, 0).recent;
}

int KvPolicy::budget(int prompt_len) const {
  const KvRule r = resolve(prompt_len, 0);
  return r.evicts() ? r.sinks + r.heavy + r.recent : kUnbounded;
}

bool KvPolicy::bounded() const {
  return row_or_throw(policy).score != SlotScore::None;
}

std::string KvPolicy::summary() const {
  const PolicyRow& row = row_or_throw(policy);
  std::ostringstream os;
  os << row.name;
  char sep = ':';
  for (const CountKeys& c : kCounts) {
    const Count use = row.*c.use;
    if (use == Count::Unused) continue;
    os << sep;
    sep = ',';
    const int tokens = this->*c.tokens;
    if (use == Count::Tokens) {
      os << tokens;
    } else if (tokens > 0) {
      os << tokens << " tokens";
    } else {
      os << fmt(this->*c.ratio);
    }
  }
  return os.str();
}

std::vector<std::string> kv_policy_names() {
  std::vector<std::string> names;
  for (const PolicyRow& r : kPolicies) names.push_back(r.name);
  return names;
}

KvRule kv_rule(const std::string& policy, int sinks, int heavy, int recent) {
  const PolicyRow& row = row_or_throw(policy);
  const int counts[] = {sinks, heavy, recent};
  for (const CountKeys& c : kCounts) {
    const int n = counts[&c - kCounts];
    H2OFLEX_INPUT_CHECK(n >= 0 && (n == 0 || row.*c.use != Count::Unused), "kv policy '", policy,
                        "' takes ", keys_taken(row), ", not ", c.tokens_key, " = ", n);
  }
  KvRule r = rule_of(row);
  r.sinks = sinks;
  r.heavy = heavy;
  r.recent = recent;
  return r;
}

KvPolicy parse_kv_policy(const YAML::Node& node, const std::string& path) {
  require_mapping(
      node, path,
      {"policy", "heavy_ratio", "recent_ratio", "heavy_tokens", "recent_tokens", "sink_tokens"});
  Written w;
  if (node["policy"]) {
    w.policy = read_string(node["policy"], key_path(path, "policy"));
    w.policy_line = line_of(node["policy"]);
  }
  for (const CountKeys& c : kCounts) {
    Given& g = w.counts[&c - kCounts];
    if (c.ratio_key && node[c.ratio_key]) {
      g.ratio = read_double(node[c.ratio_key], key_path(path, c.ratio_key));
      g.ratio_line = line_of(node[c.ratio_key]);
    }
    if (node[c.tokens_key]) {
      g.tokens = static_cast<double>(read_int(node[c.tokens_key], key_path(path, c.tokens_key)));
      g.tokens_line = line_of(node[c.tokens_key]);
    }
  }
  return build(w, {"", path});
}

KvPolicy parse_kv_spec(const std::string& spec) {
  const std::string what = "--kv '" + spec + "'";
  const size_t colon = spec.find(':');
  Written w;
  w.policy = spec.substr(0, colon);
  const PolicyRow* row = find_row(w.policy);
  H2OFLEX_INPUT_CHECK(row != nullptr, what, ": expected ", spec_usage());
  // The values fill the counts the policy takes, in table order (sinks, heavy, recent).
  std::vector<int> used;
  for (int i = 0; i < 3; ++i) {
    if (row->*kCounts[i].use != Count::Unused) used.push_back(i);
  }
  if (used.empty()) {
    H2OFLEX_INPUT_CHECK(colon == std::string::npos, what, ": '", row->name,
                        "' takes no parameters");
    return build(w, {what + ": ", "kv"});
  }
  H2OFLEX_INPUT_CHECK(colon != std::string::npos, what, ": ", row->name, " needs ", used.size(),
                      " values");
  std::vector<double> values;
  for (size_t start = colon + 1;;) {
    const size_t comma = spec.find(',', start);
    const std::string item = spec.substr(start, comma - start);
    try {
      size_t n = 0;
      values.push_back(std::stod(item, &n));
      H2OFLEX_INPUT_CHECK(n == item.size(), what, ": values must be numbers");
    } catch (const std::logic_error&) {
      throw InputError(what + ": values must be numbers");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  H2OFLEX_INPUT_CHECK(values.size() == used.size(), what, ": ", row->name, " needs ", used.size(),
                      " values, got ", values.size());
  for (size_t k = 0; k < used.size(); ++k) {
    const CountKeys& c = kCounts[used[k]];
    const double v = values[k];
    Given& g = w.counts[used[k]];
    // Values up to 1 are fractions of the prompt where a ratio is allowed; others are counts.
    if (row->*c.use == Count::RatioOrTokens && v <= 1) {
      g.ratio = v;
    } else {
      H2OFLEX_INPUT_CHECK(v == std::floor(v), what, ": ", key_path("kv", c.tokens_key), ": ",
                          fmt(v), " is not a token count",
                          row->*c.use == Count::RatioOrTokens ? " nor a fraction <= 1" : "");
      g.tokens = v;
    }
  }
  return build(w, {what + ": ", "kv"});
}

}  // namespace h2oflex::policy

namespace h2oflex {

float KvRule::fixed_score(int32_t position) const {
  switch (score) {
    case SlotScore::Position:
      return static_cast<float>(position);
    case SlotScore::Random:
      return policy::random_draw(position);
    default:
      return 0.0f;
  }
}

}  // namespace h2oflex
