// LLaMA-family and GPT-NeoX configs: the published shapes' parameter counts against the counts
// their model cards state, config.json keys and their defaults, rotary frequencies against a
// double-precision formula written here, and an error naming the key for each unsupported setting.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "models/gpt_neox/neox_model.h"
#include "models/llama/llama_model.h"
#include "models/loaders/hf_json.h"
#include "models/model_catalog.h"
#include "runtime/core/error.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Parameter counts as Hugging Face reports them (model.num_parameters()) for the real
// checkpoints; the published shapes must reproduce them exactly.
TEST(PublishedShapes, ParameterCountsMatchTheReleasedModels) {
  const std::pair<const char*, int64_t> known[] = {
      {"llama-2-7b", 6738415616},  {"llama-2-13b", 13015864320}, {"llama-2-70b", 68976648192},
      {"llama-3-8b", 8030261248},  {"llama-3-70b", 70553706496}, {"llama-3.2-1b", 1235814400},
      {"mistral-7b", 7241732096},  {"qwen2-7b", 7615616512},     {"pythia-1b", 1011781632},
      {"pythia-6.9b", 6857302016}, {"pythia-12b", 11846072320},
  };
  for (const auto& [name, count] : known) {
    const auto m = published_model(name);
    ASSERT_TRUE(m) << name;
    EXPECT_EQ(parameter_count(*m), count) << name;
  }
}

TEST(PublishedShapes, GroupedQueryGeometry) {
  const KvGeometry g = published_model("llama-3-8b")->kv_geometry();
  EXPECT_EQ(g.query_heads, 32);
  EXPECT_EQ(g.kv_heads, 8);
  EXPECT_EQ(g.head_dim, 128);
  EXPECT_EQ(published_model("llama-2-7b")->kv_geometry().kv_heads, 32);
  EXPECT_EQ(published_model("llama-2-70b")->kv_geometry().kv_heads, 8);
  EXPECT_EQ(published_model("pythia-6.9b")->kv_geometry().kv_heads, 32);
  // Organisation prefixes and case are accepted like OPT's "facebook/".
  EXPECT_TRUE(published_model("meta-llama/Llama-2-7b"));
  EXPECT_TRUE(published_model("EleutherAI/pythia-1b"));
  EXPECT_FALSE(published_model("llama-9"));
}

// inv_freq of HF's default, linear and llama3 types, in double precision from their definitions.
std::vector<double> expected_inv_freq(int64_t dim, double theta, const RopeScaling& s) {
  std::vector<double> inv;
  for (int64_t i = 0; i < dim / 2; ++i) {
    double f = 1.0 / std::pow(theta, 2.0 * static_cast<double>(i) / static_cast<double>(dim));
    if (s.type == RopeScaling::Type::Linear) f /= s.factor;
    if (s.type == RopeScaling::Type::Llama3) {
      const double wavelen = 2 * M_PI / f;
      const double low_wavelen = s.original_max_positions / s.low_freq_factor;
      const double high_wavelen = s.original_max_positions / s.high_freq_factor;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double t = (s.original_max_positions / wavelen - s.low_freq_factor) /
                         (s.high_freq_factor - s.low_freq_factor);
        f = (1 - t) * f / s.factor + t * f;
      }
    }
    inv.push_back(f);
  }
  return inv;
}

TEST(Rope, InverseFrequenciesOfEveryScalingType) {
  const RopeScaling none, linear{RopeScaling::Type::Linear, 4},
      dynamic{RopeScaling::Type::Dynamic, 2}, llama3{RopeScaling::Type::Llama3, 8, 1, 4, 8192};
  for (const RopeScaling& s : {none, linear, dynamic, llama3}) {
    const std::vector<float> got = rope_inv_freq({128, 500000, s});
    const std::vector<double> want =
        expected_inv_freq(128, 500000, s.type == RopeScaling::Type::Dynamic ? none : s);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 2e-6 * want[i]) << rope_scaling_name(s.type) << " " << i;
    }
  }
  // llama3 leaves the fastest frequencies alone and slows the slowest by `factor`.
  const std::vector<float> base = rope_inv_freq({128, 500000, none});
  const std::vector<float> l3 = rope_inv_freq({128, 500000, llama3});
  EXPECT_EQ(l3.front(), base.front());
  EXPECT_NEAR(l3.back(), base.back() / 8, 1e-6 * base.back());
}

class FamilyConfig : public testing::ScratchDirTest {
 protected:
  static json llama() {
    return {{"model_type", "llama"},    {"hidden_size", 64},
            {"num_attention_heads", 8}, {"num_key_value_heads", 2},
            {"num_hidden_layers", 2},   {"intermediate_size", 160},
            {"vocab_size", 100},        {"max_position_embeddings", 64}};
  }
  static json neox() {
    return {{"model_type", "gpt_neox"},     {"hidden_size", 64},        {"num_attention_heads", 4},
            {"num_hidden_layers", 2},       {"intermediate_size", 256}, {"vocab_size", 100},
            {"max_position_embeddings", 64}};
  }
  fs::path write(const json& doc) {
    std::ofstream(dir() / "config.json") << doc.dump();
    return dir();
  }
  // The InputError's message for `doc`.
  std::string error_for(const json& doc) {
    try {
      hf_model(write(doc), "m");
    } catch (const InputError& e) {
      return e.what();
    }
    return "<no error>";
  }
  void expect_key_error(const json& doc, const std::string& key) {
    const std::string msg = error_for(doc);
    EXPECT_NE(msg.find("\"" + key + "\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  }
};

TEST_F(FamilyConfig, LlamaDefaultsAndKeys) {
  json doc = llama();
  auto m = std::dynamic_pointer_cast<const LlamaModel>(hf_model(write(doc), "tiny"));
  ASSERT_TRUE(m);
  const LlamaConfig& c = m->config();
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_EQ(c.rope_theta, 10000);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::None);
  // An untied head is its own tensor; a tied one is the token table in both end units.
  EXPECT_EQ(m->weight_specs().back().name, "lm_head.weight");
  doc["tie_word_embeddings"] = true;
  doc["head_dim"] = 16;
  doc["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  m = std::dynamic_pointer_cast<const LlamaModel>(hf_model(write(doc), "tiny"));
  EXPECT_EQ(m->config().head_dim, 16);
  EXPECT_EQ(m->config().rope_scaling.type, RopeScaling::Type::Linear);
  EXPECT_NE(m->weight_specs().back().name, "lm_head.weight");
  EXPECT_EQ(m->unit_tensors().front(), std::vector<size_t>{0});
  const auto& head = m->unit_tensors().back();
  EXPECT_NE(std::find(head.begin(), head.end(), 0u), head.end());
  // transformers 5 writes rope_parameters instead of rope_theta + rope_scaling.
  doc.erase("rope_scaling");
  doc["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 500000.0},
                            {"factor", 8.0},           {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 32}};
  m = std::dynamic_pointer_cast<const LlamaModel>(hf_model(write(doc), "tiny"));
  EXPECT_EQ(m->config().rope_theta, 500000);
  EXPECT_EQ(m->config().rope_scaling.type, RopeScaling::Type::Llama3);
  EXPECT_EQ(m->config().rope_scaling.original_max_positions, 32);
}

TEST_F(FamilyConfig, Qwen2HasQkvBiasesAndNeoxDefaults) {
  json q = llama();
  q["model_type"] = "qwen2";
  q["sliding_window"] = 4096;  // present in every Qwen2 config, inert unless use_sliding_window
  q["use_sliding_window"] = false;
  auto m = std::dynamic_pointer_cast<const LlamaModel>(hf_model(write(q), "q"));
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->config().qkv_bias);
  auto n = std::dynamic_pointer_cast<const NeoxModel>(hf_model(write(neox()), "n"));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->config().rot_dim(), 4);  // int(16 * 0.25)
  EXPECT_TRUE(n->config().parallel_residual);
  EXPECT_EQ(n->weight_specs().back().name, "embed_out.weight");
}

TEST_F(FamilyConfig, UnsupportedSettingsNameTheirKey) {
  json d = llama();
  d["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_key_error(d, "rope_scaling.rope_type");
  d = llama();
  d["rope_scaling"] = {{"type", "llama3"}, {"factor", 4.0}};
  expect_key_error(d, "rope_scaling.low_freq_factor");
  d = llama();
  d["model_type"] = "mistral";
  d["sliding_window"] = 16;
  expect_key_error(d, "sliding_window");
  d = llama();
  d["num_key_value_heads"] = 3;
  expect_key_error(d, "num_key_value_heads");
  d = llama();
  d["hidden_act"] = "gelu";
  expect_key_error(d, "hidden_act");
  d = llama();
  d["mlp_bias"] = true;
  expect_key_error(d, "mlp_bias");
  d = llama();
  d["model_type"] = "falcon";
  expect_key_error(d, "model_type");
  d = llama();
  d.erase("intermediate_size");
  expect_key_error(d, "intermediate_size");
  d = neox();
  d["rotary_pct"] = 0.3;  // 16 * 0.3 = 4.8 -> 4 dims: even, accepted
  EXPECT_EQ(error_for(d), "<no error>");
  d["rotary_pct"] = 0.2;  // 3 dims: odd
  expect_key_error(d, "rotary_pct");
  d = neox();
  d["hidden_act"] = "gelu_new";
  expect_key_error(d, "hidden_act");
}

}  // namespace
}  // namespace h2oflex
