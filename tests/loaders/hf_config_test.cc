// config.json parsing: the fixtures' values, defaults, and an error naming the key for each
// missing, mistyped or unsupported setting.
#include <string>

#include "models/loaders/hf_config.h"
#include "runtime/core/error.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

using testing::fixture_dir;

TEST(HfConfig, ReadsFixtureConfigs) {
  const HfOptConfig pre = read_hf_opt_config(fixture_dir() / "tiny-preln");
  EXPECT_EQ(pre.hidden_size, 64);
  EXPECT_EQ(pre.num_attention_heads, 4);
  EXPECT_EQ(pre.num_hidden_layers, 3);
  EXPECT_EQ(pre.ffn_dim, 256);
  EXPECT_EQ(pre.vocab_size, 1000);
  EXPECT_EQ(pre.max_position_embeddings, 128);
  EXPECT_EQ(pre.word_embed_proj_dim, 64);
  EXPECT_TRUE(pre.do_layer_norm_before);
  EXPECT_EQ(pre.activation_function, "relu");
  EXPECT_EQ(pre.pad_token_id, 1);
  EXPECT_EQ(pre.bos_token_id, 2);
  EXPECT_EQ(pre.eos_token_id, 2);
  EXPECT_EQ(pre.torch_dtype, "float32");

  const HfOptConfig post = read_hf_opt_config(fixture_dir() / "tiny-postln" / "config.json");
  EXPECT_FALSE(post.do_layer_norm_before);
  EXPECT_EQ(post.word_embed_proj_dim, 32);
  EXPECT_EQ(post.num_hidden_layers, 2);
  EXPECT_EQ(read_hf_opt_config(fixture_dir() / "tiny-preln-fp16").torch_dtype, "float16");

  const OptConfig opt = to_opt_config(post, "tiny-postln");
  EXPECT_EQ(opt.name, "tiny-postln");
  EXPECT_EQ(opt.hidden, 64);
  EXPECT_EQ(opt.heads, 4);
  EXPECT_EQ(opt.layers, 2);
  EXPECT_EQ(opt.ffn, 256);
  EXPECT_EQ(opt.vocab, 1000);
  EXPECT_EQ(opt.max_positions, 128);
  EXPECT_EQ(opt.word_embed_dim, 32);
  EXPECT_TRUE(opt.has_projections());
  EXPECT_FALSE(opt.pre_layer_norm);
  EXPECT_EQ(opt.pad_id, 1);
  EXPECT_EQ(opt.eos_id, 2);
}

class HfConfigErrors : public testing::ScratchDirTest {
 protected:
  static nlohmann::json base() {
    return {{"model_type", "opt"},          {"hidden_size", 32}, {"num_attention_heads", 2},
            {"num_hidden_layers", 1},       {"ffn_dim", 64},     {"vocab_size", 50},
            {"max_position_embeddings", 16}};
  }
  fs::path write_config(const nlohmann::json& doc) {
    const fs::path file = dir() / "config.json";
    std::ofstream(file) << doc.dump(1);
    return file;
  }
};

TEST_F(HfConfigErrors, OptionalKeysTakeOptConfigDefaults) {
  const HfOptConfig c = read_hf_opt_config(write_config(base()));
  EXPECT_EQ(c.word_embed_proj_dim, 32);
  EXPECT_TRUE(c.do_layer_norm_before);
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_EQ(c.torch_dtype, "");
  auto doc = base();
  doc["torch_dtype"] = "bfloat16";
  EXPECT_EQ(read_hf_opt_config(write_config(doc)).torch_dtype, "bfloat16");
}

TEST_F(HfConfigErrors, EachRequiredKeyMissing) {
  for (const char* key : {"hidden_size", "num_attention_heads", "num_hidden_layers", "ffn_dim",
                          "vocab_size", "max_position_embeddings"}) {
    SCOPED_TRACE(key);
    auto doc = base();
    doc.erase(key);
    const fs::path file = write_config(doc);
    EXPECT_THROW_WITH(read_hf_opt_config(file), InputError, std::string("\"") + key + "\"");
    EXPECT_THROW_WITH(read_hf_opt_config(file), InputError, "config.json");
  }
}

TEST_F(HfConfigErrors, WrongTypesAndValues) {
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"hidden_size", "32"},
      {"vocab_size", 0},
      {"ffn_dim", 6.5},
      {"word_embed_proj_dim", -1},
      {"do_layer_norm_before", "yes"},
      {"activation_function", "gelu"},
      {"pad_token_id", -3},
      {"eos_token_id", "2"},
      {"torch_dtype", "float64"},
      {"dtype", 16},
      {"model_type", "llama"},
      {"num_attention_heads", 3},  // does not divide 32
      {"enable_bias", false},
      {"layer_norm_elementwise_affine", false},
      {"_remove_final_layer_norm", true},
  };
  for (const auto& [key, value] : cases) {
    SCOPED_TRACE(key);
    auto doc = base();
    doc[key] = value;
    EXPECT_THROW_WITH(read_hf_opt_config(write_config(doc)), InputError, "\"" + key + "\"");
  }
}

TEST_F(HfConfigErrors, MissingOrMalformedFile) {
  EXPECT_THROW_WITH(read_hf_opt_config(dir() / "absent.json"), InputError, "absent.json");
  EXPECT_THROW_WITH(read_hf_opt_config(dir()), InputError, "config.json");
  std::ofstream(dir() / "config.json") << "{\"hidden_size\": 32,";
  EXPECT_THROW_WITH(read_hf_opt_config(dir()), InputError, "malformed JSON");
  std::ofstream(dir() / "config.json") << "[]";
  EXPECT_THROW_WITH(read_hf_opt_config(dir()), InputError, "not a JSON object");
}

}  // namespace
}  // namespace h2oflex
