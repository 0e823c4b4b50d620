// The demo model shipped in models/demo/opt-demo opens as an HF checkpoint with the shapes its
// config implies, stored in fp16, with the special ids and vocabulary size the tokenizer uses.
#include <string>

#include "models/loaders/hf_checkpoint.h"
#include "models/loaders/hf_config.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

TEST(DemoModel, OpensWithConfigShapes) {
  const auto cp =
      HfCheckpoint::open(std::filesystem::path(H2OFLEX_SOURCE_DIR) / "models/demo/opt-demo");
  const HfOptConfig c = read_hf_opt_config(cp.dir());
  EXPECT_EQ(c.vocab_size, 4096);
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_hidden_layers, 4);
  EXPECT_EQ(c.ffn_dim, 512);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_TRUE(c.do_layer_norm_before);
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_EQ(c.pad_token_id, 1);

  const int64_t h = c.hidden_size;
  cp.get("decoder.embed_tokens.weight", {c.vocab_size, h});
  cp.get("decoder.embed_positions.weight", {c.max_position_embeddings + 2, h});
  cp.get("decoder.final_layer_norm.weight", {h});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l) + ".";
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      cp.get(p + "self_attn." + proj + ".weight", {h, h});
      cp.get(p + "self_attn." + proj + ".bias", {h});
    }
    cp.get(p + "fc1.weight", {c.ffn_dim, h});
    cp.get(p + "fc2.weight", {h, c.ffn_dim});
  }
  size_t elements = 0;
  for (const TensorInfo& t : cp.weights().tensors()) {
    EXPECT_EQ(t.dtype, DType::F16) << t.name;
    elements += static_cast<size_t>(shape_numel(t.shape));
  }
  // Every parameter of a 4-layer, 128-wide OPT, the tied lm_head counted once.
  const size_t layer = 4 * (h * h + h) + 2 * (h * c.ffn_dim) + c.ffn_dim + h + 4 * h;
  EXPECT_EQ(elements, c.num_hidden_layers * layer + c.vocab_size * h +
                          (c.max_position_embeddings + 2) * h + 2 * h);

  // Weights are random, not HF's 0/1 initialisation: a LayerNorm weight is not all ones.
  const Tensor ln =
      cp.weights().read(cp.get("decoder.layers.0.final_layer_norm.weight"), DType::F32);
  int ones = 0;
  for (float x : ln.span<float>()) ones += x == 1.0f;
  EXPECT_LT(ones, 4);
}

}  // namespace
}  // namespace h2oflex
