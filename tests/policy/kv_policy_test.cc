// The KV policy: the parsed forms (YAML mapping and command line) and the rules they resolve to.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <string>

#include "policy/kv_policy.h"
#include "runtime/core/error.h"
#include "tests/policy/policy_test_support.h"

namespace h2oflex::policy {
namespace {

using testing_support::error_of;

TEST(KvPolicy, H2OBudgetFromRatiosOrTokens) {
  const KvPolicy kv =
      parse_kv_policy(YAML::Load("{policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1}"));
  EXPECT_EQ(kv.policy, "h2o");
  EXPECT_EQ(kv.heavy(512), 51);  // floor(51.2)
  EXPECT_EQ(kv.recent(512), 51);
  EXPECT_EQ(kv.budget(512), 102);
  EXPECT_EQ(kv.heavy(5), 1);  // max(1, floor(0.5))
  const KvPolicy t =
      parse_kv_policy(YAML::Load("{policy: h2o, heavy_tokens: 7, recent_ratio: 0.25}"));
  EXPECT_EQ(t.heavy(100), 7);
  EXPECT_EQ(t.recent(100), 25);
  const KvPolicy s =
      parse_kv_policy(YAML::Load("{policy: streaming, sink_tokens: 4, recent_tokens: 60}"));
  EXPECT_EQ(s.heavy(1000), 4);
  EXPECT_EQ(s.budget(1000), 64);
  const KvPolicy f = parse_kv_policy(YAML::Load("{policy: full}"));
  EXPECT_FALSE(f.bounded());
  EXPECT_EQ(f.budget(100), KvPolicy::kUnbounded);
}

TEST(KvPolicy, Errors) {
  EXPECT_NE(error_of([] {
              parse_kv_policy(YAML::Load("{policy: lru}"));
            }).find("kv.policy: 'lru' is not a kv policy"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(YAML::Load("{policy: h2o, heavy_ratio: 1.5, recent_ratio: 0.1}"));
            }).find("kv.heavy_ratio: 1.5 is not a fraction"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(YAML::Load("{policy: full, heavy_ratio: 0.1}"));
            }).find("kv.heavy_ratio: not used"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(YAML::Load("{policy: h2o, recent_ratio: 0.1}"));
            }).find("h2o needs heavy_ratio or heavy_tokens"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(
                  YAML::Load("{policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1, window: 3}"));
            }).find("kv.window: unknown key"),
            std::string::npos);
}

TEST(KvPolicy, CommandLineSpec) {
  EXPECT_EQ(parse_kv_spec("full").policy, "full");
  const KvPolicy h = parse_kv_spec("h2o:0.1,0.1");
  EXPECT_EQ(h.policy, "h2o");
  EXPECT_EQ(h.budget(512), 102);
  const KvPolicy t = parse_kv_spec("h2o:20,30");
  EXPECT_EQ(t.budget(512), 50);
  const KvPolicy s = parse_kv_spec("streaming:4,60");
  EXPECT_EQ(s.policy, "streaming");
  EXPECT_EQ(s.budget(512), 64);
  EXPECT_NE(error_of([] { parse_kv_spec("h2o:0.1"); }).find("--kv 'h2o:0.1'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_kv_spec("h2o:x,y"); }).find("numbers"), std::string::npos);
  EXPECT_NE(error_of([] { parse_kv_spec("lru:1,2"); }).find("expected full"), std::string::npos);
}

// ---- the table: each policy's resolved rule, against the definitions in the papers ----

void expect_kind(const KvRule& r, SlotScore score, PrefillStat prefill, DecodeUpdate update,
                 VictimScope scope = VictimScope::PerHead, bool prefill_only = false) {
  EXPECT_EQ(r.score, score) << r.name();
  EXPECT_EQ(r.prefill, prefill) << r.name();
  EXPECT_EQ(r.update, update) << r.name();
  EXPECT_EQ(r.scope, scope) << r.name();
  EXPECT_EQ(r.prefill_only, prefill_only) << r.name();
}

TEST(KvRule, TableHoldsTheKnownPolicies) {
  EXPECT_EQ(kv_policy_names(),
            (std::vector<std::string>{"full", "h2o", "streaming", "tova", "snapkv", "random"}));
}

TEST(KvRule, FullKeepsEveryToken) {
  const KvRule r = parse_kv_policy(YAML::Load("{policy: full}")).resolve(100, 20);
  EXPECT_EQ(r.name(), "full");
  expect_kind(r, SlotScore::None, PrefillStat::None, DecodeUpdate::None);
  EXPECT_FALSE(r.evicts());
  EXPECT_FALSE(r.uses_attention_scores());
  EXPECT_EQ(r.sinks + r.heavy + r.recent, 0);
  EXPECT_EQ(r.capacity(100, 20), 120);
  EXPECT_EQ(KvRule{}.capacity(7, 3), 10);  // the default rule is the full cache
}

TEST(KvRule, H2OAccumulatesAttentionOverHeavyAndRecent) {
  const KvRule r = parse_kv_policy(YAML::Load("{policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.2}"))
                       .resolve(512, 32);
  EXPECT_EQ(r.name(), "h2o");
  expect_kind(r, SlotScore::Attention, PrefillStat::ColumnSum, DecodeUpdate::Accumulate);
  EXPECT_TRUE(r.evicts());
  EXPECT_TRUE(r.uses_attention_scores());
  EXPECT_EQ(r.sinks, 0);
  EXPECT_EQ(r.heavy, 51);    // floor(51.2)
  EXPECT_EQ(r.recent, 102);  // floor(102.4)
  EXPECT_EQ(r.capacity(512, 32), 153);
  // Ratios resolve against each prompt length; token counts do not depend on it.
  EXPECT_EQ(parse_kv_spec("h2o:0.1,0.2").resolve(10, 5).heavy, 1);  // max(1, floor(1.0))
  EXPECT_EQ(parse_kv_spec("h2o:0.1,0.2").resolve(10, 5).recent, 2);
  EXPECT_EQ(parse_kv_spec("h2o:9,0.5").resolve(40, 5).heavy, 9);
}

TEST(KvRule, StreamingKeepsSinksAndRecentByPosition) {
  const KvRule r =
      parse_kv_policy(YAML::Load("{policy: streaming, sink_tokens: 4, recent_tokens: 60}"))
          .resolve(1000, 10);
  EXPECT_EQ(r.name(), "streaming");
  expect_kind(r, SlotScore::Position, PrefillStat::None, DecodeUpdate::None);
  EXPECT_TRUE(r.evicts());
  EXPECT_FALSE(r.uses_attention_scores());
  EXPECT_EQ(r.sinks, 4);
  EXPECT_EQ(r.heavy, 0);
  EXPECT_EQ(r.recent, 60);
  EXPECT_EQ(r.capacity(1000, 10), 64);
}

TEST(KvRule, TovaReplacesScoresByTheLastQuery) {
  const KvRule r =
      parse_kv_policy(YAML::Load("{policy: tova, heavy_ratio: 0.25, recent_tokens: 3}"))
          .resolve(64, 16);
  EXPECT_EQ(r.name(), "tova");
  // One kept set per layer: the scores are averaged over the layer's heads (TOVA's paper).
  expect_kind(r, SlotScore::Attention, PrefillStat::ColumnSum, DecodeUpdate::Replace,
              VictimScope::Layer);
  EXPECT_TRUE(r.uses_attention_scores());
  EXPECT_TRUE(r.decode_scores());
  EXPECT_EQ(r.sinks, 0);
  EXPECT_EQ(r.heavy, 16);
  EXPECT_EQ(r.recent, 3);
  EXPECT_EQ(r.capacity(64, 16), 19);
}

// SnapKV selects once, by its observation window's pooled attention, and keeps every new token.
TEST(KvRule, SnapKvSelectsAtPrefillAndGrows) {
  const KvRule r =
      parse_kv_policy(YAML::Load("{policy: snapkv, heavy_ratio: 0.1, recent_tokens: 32}"))
          .resolve(512, 64);
  expect_kind(r, SlotScore::Attention, PrefillStat::WindowPooled, DecodeUpdate::None,
              VictimScope::PerHead, /*prefill_only=*/true);
  EXPECT_TRUE(r.uses_attention_scores());
  EXPECT_FALSE(r.decode_scores());
  EXPECT_EQ(r.heavy, 51);
  EXPECT_EQ(r.recent, 32);
  EXPECT_EQ(r.capacity(512, 64), 51 + 32 + 64);
}

// The control: a fixed draw per position, no attention at all.
TEST(KvRule, RandomRanksByAFixedDraw) {
  const KvRule r = parse_kv_spec("random:0.1,0.1").resolve(100, 10);
  expect_kind(r, SlotScore::Random, PrefillStat::None, DecodeUpdate::None);
  EXPECT_FALSE(r.uses_attention_scores());
  EXPECT_EQ(r.capacity(100, 10), 20);
  EXPECT_EQ(r.fixed_score(17), r.fixed_score(17));
  EXPECT_NE(r.fixed_score(17), r.fixed_score(18));
  EXPECT_EQ(kv_rule("streaming", 1, 0, 1).fixed_score(17), 17.0f);  // streaming: the position
}

TEST(KvRule, DirectCountsMustBeOnesThePolicyTakes) {
  const KvRule s = kv_rule("streaming", 2, 0, 3);
  EXPECT_EQ(s.score, SlotScore::Position);
  EXPECT_EQ(s.capacity(50, 50), 5);
  EXPECT_NE(error_of([] { kv_rule("h2o", 1, 2, 3); }).find("sink_tokens"), std::string::npos);
  EXPECT_NE(error_of([] { kv_rule("full", 0, 2, 0); }).find("heavy_tokens"), std::string::npos);
  EXPECT_NE(error_of([] { kv_rule("lru", 0, 2, 3); }).find("'lru'"), std::string::npos);
}

// ---- the two written forms: one policy for equivalent inputs, one message for bad ones ----

TEST(KvPolicy, MappingAndCommandLineAgree) {
  const struct {
    const char* yaml;
    const char* spec;
  } pairs[] = {
      {"{policy: full}", "full"},
      {"{}", "full"},
      {"{policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1}", "h2o:0.1,0.1"},
      {"{policy: h2o, heavy_ratio: 0.5, recent_ratio: 0.5}", "h2o:0.5,0.5"},
      {"{policy: h2o, heavy_tokens: 20, recent_tokens: 30}", "h2o:20,30"},
      {"{policy: h2o, heavy_tokens: 7, recent_ratio: 0.25}", "h2o:7,0.25"},
      {"{policy: h2o, heavy_ratio: 1, recent_tokens: 2}", "h2o:1,2"},
      {"{policy: streaming, sink_tokens: 4, recent_tokens: 60}", "streaming:4,60"},
      {"{policy: streaming, sink_tokens: 0, recent_tokens: 8}", "streaming:0,8"},
      {"{policy: streaming, sink_tokens: 1, recent_tokens: 2}", "streaming:1,2"},
      {"{policy: streaming, sink_tokens: 4, recent_ratio: 0.2}", "streaming:4,0.2"},
      {"{policy: tova, heavy_ratio: 0.3, recent_tokens: 4}", "tova:0.3,4"},
  };
  for (const auto& p : pairs) {
    const KvPolicy a = parse_kv_policy(YAML::Load(p.yaml)), b = parse_kv_spec(p.spec);
    EXPECT_EQ(a.policy, b.policy) << p.spec;
    EXPECT_EQ(a.heavy_ratio, b.heavy_ratio) << p.spec;
    EXPECT_EQ(a.recent_ratio, b.recent_ratio) << p.spec;
    EXPECT_EQ(a.heavy_tokens, b.heavy_tokens) << p.spec;
    EXPECT_EQ(a.recent_tokens, b.recent_tokens) << p.spec;
    EXPECT_EQ(a.sink_tokens, b.sink_tokens) << p.spec;
    EXPECT_EQ(a.summary(), b.summary()) << p.spec;
    for (int prompt : {1, 9, 100, 2048}) {
      const KvRule ra = a.resolve(prompt, 8), rb = b.resolve(prompt, 8);
      EXPECT_EQ(ra.sinks, rb.sinks) << p.spec;
      EXPECT_EQ(ra.heavy, rb.heavy) << p.spec;
      EXPECT_EQ(ra.recent, rb.recent) << p.spec;
      EXPECT_EQ(ra.capacity(prompt, 8), rb.capacity(prompt, 8)) << p.spec;
    }
  }
  // Integers above 1 are token counts, 1 and below fractions; sinks are counts only.
  EXPECT_EQ(parse_kv_spec("h2o:1,2").heavy_ratio, 1.0);
  EXPECT_EQ(parse_kv_spec("h2o:1,2").recent_tokens, 2);
  EXPECT_EQ(parse_kv_spec("streaming:1,1").sink_tokens, 1);
  EXPECT_EQ(parse_kv_spec("streaming:1,1").recent_ratio, 1.0);
}

TEST(KvPolicy, BothFormsRefuseTheSameInputNamingTheKey) {
  const struct {
    const char* yaml;
    const char* spec;
    const char* key;
  } pairs[] = {
      {"{policy: h2o, heavy_ratio: 0.6, recent_ratio: 0.5}", "h2o:0.6,0.5",
       "kv.heavy_ratio + kv.recent_ratio"},
      {"{policy: h2o, heavy_ratio: 0.5, recent_ratio: 0}", "h2o:0.5,0", "kv.recent_ratio"},
      {"{policy: h2o, heavy_ratio: -0.5, recent_ratio: 0.5}", "h2o:-0.5,0.5", "kv.heavy_ratio"},
      {"{policy: h2o, heavy_tokens: 20000000, recent_tokens: 5}", "h2o:20000000,5",
       "kv.heavy_tokens"},
      {"{policy: tova, heavy_ratio: 0.9, recent_ratio: 0.2}", "tova:0.9,0.2",
       "kv.heavy_ratio + kv.recent_ratio"},
      {"{policy: streaming, sink_tokens: 4, recent_tokens: 0}", "streaming:4,0", "kv.recent_"},
      {"{policy: streaming, sink_tokens: -1, recent_tokens: 4}", "streaming:-1,4",
       "kv.sink_tokens"},
      {"{policy: streaming, sink_tokens: 1.5, recent_tokens: 4}", "streaming:1.5,4",
       "kv.sink_tokens"},
  };
  for (const auto& p : pairs) {
    const std::string a = error_of([&] { parse_kv_policy(YAML::Load(p.yaml)); });
    const std::string b = error_of([&] { parse_kv_spec(p.spec); });
    EXPECT_NE(a.find(p.key), std::string::npos) << p.yaml << " -> " << a;
    EXPECT_NE(b.find(p.key), std::string::npos) << p.spec << " -> " << b;
    EXPECT_NE(b.find(std::string("--kv '") + p.spec + "'"), std::string::npos) << b;
  }
}

// No heavy slots is valid in both forms and resolves to 0 (the recent-only "Local" baseline),
// while a ratio above 0 still keeps at least one token.
TEST(KvPolicy, ZeroHeavyIsTheRecentOnlyBaseline) {
  for (const KvPolicy& kv :
       {parse_kv_policy(YAML::Load("{policy: h2o, heavy_ratio: 0, recent_ratio: 0.2}")),
        parse_kv_policy(YAML::Load("{policy: h2o, heavy_tokens: 0, recent_ratio: 0.2}")),
        parse_kv_spec("h2o:0,0.2"), parse_kv_spec("tova:0,0.2")}) {
    const KvRule r = kv.resolve(100, 10);
    EXPECT_EQ(r.heavy, 0) << kv.summary();
    EXPECT_EQ(r.recent, 20) << kv.summary();
    EXPECT_EQ(r.capacity(100, 10), 20) << kv.summary();
  }
  EXPECT_EQ(parse_kv_spec("h2o:0.001,0.2").resolve(100, 10).heavy, 1);
}

TEST(KvPolicy, ErrorsNameTheKeyAndLine) {
  const YAML::Node doc = YAML::Load(
      "kv:\n"
      "  policy: h2o\n"
      "  heavy_ratio: 0.7\n"
      "  recent_ratio: 0.7\n");
  const std::string sum = error_of([&] { parse_kv_policy(doc["kv"]); });
  EXPECT_NE(sum.find("kv.heavy_ratio + kv.recent_ratio: 0.7 + 0.7 = 1.4 exceeds 1"),
            std::string::npos)
      << sum;
  EXPECT_NE(sum.find("(line 3)"), std::string::npos) << sum;
  const std::string unknown =
      error_of([] { parse_kv_policy(YAML::Load("x: 1\nkv: {policy: lru}\n")["kv"]); });
  EXPECT_NE(unknown.find(
                "kv.policy: 'lru' is not a kv policy (full, h2o, streaming, tova, snapkv, random)"),
            std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("(line 2)"), std::string::npos) << unknown;
  EXPECT_NE(error_of([] {
              parse_kv_policy(YAML::Load("{policy: streaming, sink_tokens: 4, heavy_ratio: 0.1}"));
            }).find("kv.heavy_ratio: not used by kv policy 'streaming'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(
                  YAML::Load("{policy: h2o, heavy_ratio: 0.1, recent_ratio: 0.1, "
                             "sink_tokens: 4}"));
            }).find("kv.sink_tokens: not used by kv policy 'h2o'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(
                  YAML::Load("{policy: h2o, heavy_ratio: 0.1, heavy_tokens: 4, "
                             "recent_ratio: 0.1}"));
            }).find("give heavy_ratio or heavy_tokens, not both"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(YAML::Load("{policy: streaming, recent_tokens: 4}"));
            }).find("kv.sink_tokens: streaming needs sink_tokens"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_kv_policy(YAML::Load("rows:\n  - {policy: h2o, heavy_ratio: 2}\n")["rows"][0],
                              "rows[0].kv");
            }).find("rows[0].kv.heavy_ratio: 2 is not a fraction"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_kv_spec("lru:1,2"); })
                .find("expected full, h2o:HEAVY,RECENT, streaming:SINK,RECENT, tova:HEAVY,RECENT, "
                      "snapkv:HEAVY,RECENT or random:HEAVY,RECENT"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_kv_spec("full:1,2"); }).find("takes no parameters"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_kv_spec("h2o:1,2,3"); }).find("needs 2 values, got 3"),
            std::string::npos);
}

}  // namespace
}  // namespace h2oflex::policy
