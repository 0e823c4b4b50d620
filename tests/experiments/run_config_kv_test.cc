// The kv: section of a run config goes through the one KV parser: the policy as written is kept,
// the rule is resolved against the config's prompt length, and errors name the file and the key.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "experiments/common/run_config.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

RunConfig parse(const std::string& yaml) {
  return parse_run_config(YAML::Load(yaml), "run.yaml");
}

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

TEST(RunConfigKv, KeepsThePolicyAndResolvesItForThePrompt) {
  const RunConfig c = parse(
      "model: opt-125m\nprompt_len: 100\ngen_len: 4\n"
      "kv: {policy: h2o, heavy_ratio: 0.15, recent_tokens: 5}\n");
  EXPECT_EQ(c.kv_policy.policy, "h2o");
  EXPECT_EQ(c.kv_policy.heavy_ratio, 0.15);
  EXPECT_EQ(c.kv_policy.recent_tokens, 5);
  EXPECT_EQ(c.kv.name(), "h2o");
  EXPECT_EQ(c.kv.heavy, 15);  // floor(0.15 * 100)
  EXPECT_EQ(c.kv.recent, 5);
  EXPECT_EQ(c.kv.capacity(100, 4), 20);

  const RunConfig s = parse(
      "model: opt-125m\nprompt_len: 50\nkv: {policy: streaming, sink_tokens: 4, recent_tokens: "
      "8}\n");
  EXPECT_EQ(s.kv.sinks, 4);
  EXPECT_EQ(s.kv.heavy, 0);
  EXPECT_EQ(s.kv.recent, 8);

  const RunConfig f = parse("model: opt-125m\nprompt_len: 10\ngen_len: 6\n");
  EXPECT_EQ(f.kv_policy.policy, "full");
  EXPECT_FALSE(f.kv.evicts());
  EXPECT_EQ(f.kv.capacity(10, 6), 16);
}

TEST(RunConfigKv, ErrorsNameTheFileKeyAndLine) {
  const std::string sum =
      error_of("model: opt-125m\nkv:\n  policy: h2o\n  heavy_ratio: 0.8\n  recent_ratio: 0.3\n");
  EXPECT_NE(sum.find("run.yaml: kv.heavy_ratio + kv.recent_ratio: 0.8 + 0.3 = 1.1 exceeds 1"),
            std::string::npos)
      << sum;
  EXPECT_NE(sum.find("(line 4)"), std::string::npos) << sum;
  const std::string unused = error_of("model: opt-125m\nkv: {policy: full, recent_tokens: 3}\n");
  EXPECT_NE(unused.find("run.yaml: kv.recent_tokens: not used by kv policy 'full'"),
            std::string::npos)
      << unused;
}

}  // namespace
}  // namespace h2oflex
