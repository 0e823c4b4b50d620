// Small GGUF models (tests/fixtures/gguf, written by tools/gen_gguf_fixtures.py with the gguf
// package's writer from random weights: llama with q/k rows permuted as llama.cpp's converter
// does, qwen2 with q/k/v biases and no permutation) run through `model: FILE.gguf` against
// transformers loading the same files: logits after the prompt and after each greedy token
// within 1e-4 of the largest (f32), the same greedy tokens; and GGUF files that do not describe
// a model this engine runs, refused naming the key or tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/generator.h"
#include "experiments/common/model_source.h"
#include "models/gguf/gguf_checkpoint.h"
#include "models/gguf/gguf_file.h"
#include "models/gpt_neox/neox_model.h"
#include "models/llama/llama_model.h"
#include "runtime/core/error.h"
#include "tests/loaders/gguf_test_support.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

fs::path fixtures() {
  return fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/gguf";
}

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(fixtures() / "expected.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

// Greedy generation of `steps` tokens after `prompt` in f32: the tokens equal the reference's
// and the logits after the prompt and after each token are within 1e-4 of its largest.
void expect_generation_matches(const DecoderModel& model, const ModelWeights& w,
                               const std::vector<int32_t>& prompt, int steps,
                               const nlohmann::json& ref, const std::string& what) {
  GenerationSettings g;
  g.gen_len = steps;
  g.stop_at_eos = false;
  g.compute = ops::ComputeType::F32;
  g.kv_dtype = DType::F32;
  std::vector<std::vector<float>> logits;
  g.on_logits = [&](int, const Tensor& t) {
    logits.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  };
  const auto tokens = generate_in_ram(model, w, {prompt}, g).tokens.at(0);
  EXPECT_EQ(tokens, ref["greedy_tokens"].get<std::vector<int32_t>>()) << what;
  ASSERT_EQ(logits.size(), size_t(steps)) << what;
  for (int s = 0; s < steps; ++s) {
    const auto want = ref["logits"][s].get<std::vector<double>>();
    ASSERT_EQ(logits[s].size(), want.size()) << what;
    double worst = 0, largest = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(double(logits[s][i]) - want[i]));
      largest = std::max(largest, std::abs(want[i]));
    }
    EXPECT_LE(worst / largest, 1e-4) << what << " step " << s;
  }
}

TEST(GgufModel, LogitsAndGreedyTokensMatchTransformersOnTheSameFile) {
  const auto prompt = expected()["prompt"].get<std::vector<int32_t>>();
  const int steps = expected()["steps"].get<int>();
  ASSERT_EQ(expected()["models"].size(), 5u);
  for (const auto& [name, ref] : expected()["models"].items()) {
    const ModelSource src = open_model_source((fixtures() / (name + ".gguf")).string(), {}, 0);
    const auto* llama = dynamic_cast<const LlamaModel*>(src.model.get());
    ASSERT_NE(llama, nullptr) << name;
    EXPECT_EQ(llama->config().tied_embeddings, ref["tied"].get<bool>()) << name;
    const ModelWeights w = load_model_weights(*src.model, DType::F32, src.producer);
    expect_generation_matches(*src.model, w, prompt, steps, ref, name);
  }
}

// GPT-NeoX (gptneox-*.gguf): transformers has no GGUF loader for it, so the oracle is the HF
// GPTNeoXForCausalLM the file was written from, holding the values the file stores. The fused
// q/k/v rows come back in HF's order both when unpacked (weight_format: plain) and when the
// Q8_0 blocks are kept and computed on (weight_format: stored).
TEST(GgufModel, GptNeoxLogitsAndGreedyTokensMatchTransformersWithTheStoredValues) {
  std::ifstream in(fixtures() / "expected-neox.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const auto prompt = expected["prompt"].get<std::vector<int32_t>>();
  const int steps = expected["steps"].get<int>();
  ASSERT_EQ(expected["models"].size(), 2u);
  for (const auto& [name, ref] : expected["models"].items()) {
    const ModelSource src = open_model_source((fixtures() / (name + ".gguf")).string(), {}, 0);
    const auto* neox = dynamic_cast<const NeoxModel*>(src.model.get());
    ASSERT_NE(neox, nullptr) << name;
    EXPECT_EQ(neox->config().parallel_residual, ref["parallel_residual"].get<bool>()) << name;
    EXPECT_EQ(neox->config().rot_dim(), ref["rot_dim"].get<int64_t>()) << name;
    for (const bool stored : {false, true}) {
      const std::string what = name + (stored ? " (stored blocks)" : " (unpacked)");
      const std::vector<StorageFormat> formats =
          weight_formats(*src.model, DType::F32,
                         stored ? WeightFormat{} : WeightFormat{WeightFormat::Mode::Plain}, false);
      const ModelWeights w = load_model_weights(*src.model, formats, src.producer, src.packed);
      size_t packed = 0;
      for (const Tensor& t : w.tensors) packed += t.packed() != PackedFormat::None;
      EXPECT_EQ(packed > 0, stored && name.find("q8_0") != std::string::npos) << what;
      expect_generation_matches(*src.model, w, prompt, steps, ref, what);
    }
  }
}

// `convert --from FILE.gguf` writes config.json beside the layout: for GPT-NeoX, one that the
// Hugging Face reader reads back as the same model; and `dummy: true` keeps the family.
class GgufNeoxDocuments : public testing::ScratchDirTest {};

TEST_F(GgufNeoxDocuments, ConfigJsonReadsBackAsTheSameModel) {
  for (const char* name : {"gptneox-q8_0-parallel", "gptneox-f16-sequential"}) {
    const auto ckpt = GgufCheckpoint::open(fixtures() / (std::string(name) + ".gguf"));
    const NeoxConfig& want = dynamic_cast<const NeoxModel&>(*ckpt->model()).config();
    std::ofstream(dir() / "config.json") << ckpt->hf_documents().at("config.json").dump();
    const NeoxConfig got = read_hf_neox_config(dir() / "config.json", want.name);
    EXPECT_EQ(got.hidden, want.hidden) << name;
    EXPECT_EQ(got.heads, want.heads) << name;
    EXPECT_EQ(got.layers, want.layers) << name;
    EXPECT_EQ(got.ffn, want.ffn) << name;
    EXPECT_EQ(got.vocab, want.vocab) << name;
    EXPECT_EQ(got.max_positions, want.max_positions) << name;
    EXPECT_EQ(got.rot_dim(), want.rot_dim()) << name;
    EXPECT_EQ(got.rope_theta, want.rope_theta) << name;
    EXPECT_EQ(got.parallel_residual, want.parallel_residual) << name;
    EXPECT_EQ(got.attention_bias, want.attention_bias) << name;
    EXPECT_EQ(got.layer_norm_eps, want.layer_norm_eps) << name;
    EXPECT_EQ(got.eos_id, want.eos_id) << name;
    EXPECT_NE(dynamic_cast<const NeoxModel*>(ckpt->shape_model().get()), nullptr) << name;
  }
}

class GgufModelErrors : public testing::ScratchDirTest {
 protected:
  // The fixture `name` with `bytes` written over its bytes at `offset`, as a new file.
  fs::path patched(const std::string& name, uint64_t offset, const std::string& bytes) {
    std::string data = testing::read_bytes(fixtures() / name);
    data.replace(offset, bytes.size(), bytes);
    const fs::path out = dir() / name;
    testing::write_bytes(out, data);
    return out;
  }
  // Offset of the value of metadata key `key` (GgufFile's own record of it).
  static uint64_t value_offset(const std::string& name, const std::string& key) {
    return GgufFile::open(fixtures() / name).find(key)->offset;
  }
  static std::string quoted(const fs::path& file) {
    return detail::concat("'", file.string(), "'");
  }
  static std::string error_of(const fs::path& file) {
    try {
      (void)open_model_source(file.string(), {}, 0);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(GgufModelErrors, AnArchitectureOutsideTheLlamaFamilyIsRefusedNamingTheKey) {
  const std::string name = "llama-q4_0-tied.gguf";
  const uint64_t at = value_offset(name, "general.architecture");
  const fs::path file = patched(name, at + 8, "bloom");  // after the string's length
  EXPECT_EQ(
      error_of(file),
      detail::concat(quoted(file), ": metadata key 'general.architecture' (at byte offset ", at,
                     ", a string) is 'bloom'; implemented: llama (Llama, Mistral), "
                     "qwen2, gptneox"));
}

TEST_F(GgufModelErrors, AGptNeoxFileTheFamilyCannotRunIsRefusedNamingTheKeyOrTensor) {
  const std::string name = "gptneox-q8_0-parallel.gguf";
  const uint32_t three = 3;  // rotated dimensions per head: odd
  const uint64_t at = value_offset(name, "gptneox.rope.dimension_count");
  const fs::path odd =
      patched(name, at, std::string(reinterpret_cast<const char*>(&three), sizeof three));
  EXPECT_EQ(error_of(odd),
            detail::concat(quoted(odd),
                           ": metadata key 'gptneox.rope.dimension_count' (at byte "
                           "offset ",
                           at, ", a u32) is 3; it must be even and at most the head dim 16"));
  // No LM head of its own: the family has no tied head.
  const uint64_t info = GgufFile::open(fixtures() / name).find_tensor("output.weight")->info_offset;
  const fs::path tied = patched(name, info + 8, "outpux.weight");
  EXPECT_EQ(error_of(tied),
            detail::concat(quoted(tied),
                           ": tensor 'output.weight' (the LM head) is missing: a GPT-NeoX model "
                           "with its head tied to the token embedding is not supported"));
}

TEST_F(GgufModelErrors, DimsThatDoNotMatchTheMetadataAreRefusedNamingTheTensor) {
  const std::string name = "llama-q4_0-tied.gguf";
  const uint32_t ffn = 128;  // the tensors are 256 wide
  const fs::path file = patched(name, value_offset(name, "llama.feed_forward_length"),
                                std::string(reinterpret_cast<const char*>(&ffn), 4));
  const uint64_t info = GgufFile::open(file).find_tensor("blk.0.ffn_gate.weight")->info_offset;
  EXPECT_EQ(error_of(file),
            detail::concat(quoted(file), ": tensor 'blk.0.ffn_gate.weight' (info at byte offset ",
                           info, ") has shape [256, 64]; the metadata implies [128, 64]"));
}

TEST_F(GgufModelErrors, FewerLayersThanTheFileHoldsAreRefused) {
  const std::string name = "llama-q4_0-tied.gguf";
  const uint32_t one = 1;
  const fs::path file = patched(name, value_offset(name, "llama.block_count"),
                                std::string(reinterpret_cast<const char*>(&one), 4));
  const std::string e = error_of(file);
  EXPECT_NE(e.find("holds 9 tensor(s) the llama model of its metadata (1 layers) does not use "
                   "('blk.1.attn_norm.weight'"),
            std::string::npos)
      << e;
}

TEST_F(GgufModelErrors, ATypeTheTableCannotUnpackIsRefusedNamingTheTensorAndType) {
  const std::string name = "llama-q4_k-q6_k.gguf";
  const GgufFile original = GgufFile::open(fixtures() / name);
  const GgufTensorInfo* t = original.find_tensor("blk.0.ffn_down.weight");
  ASSERT_EQ(t->format->name, "Q4_K");
  const uint32_t iq4_xs = 23;  // same block of 256, smaller: the data still fits
  const fs::path file = patched(name, t->info_offset + 8 + t->name.size() + 4 + 8 * t->dims.size(),
                                std::string(reinterpret_cast<const char*>(&iq4_xs), 4));
  EXPECT_EQ(error_of(file), detail::concat(quoted(file),
                                           ": tensor 'blk.0.ffn_down.weight' has type IQ4_XS, "
                                           "which h2oflex does not read (it reads F32, F16, Q4_0, "
                                           "Q4_1, Q8_0, Q4_K, Q6_K, BF16)"));
}

}  // namespace
}  // namespace h2oflex
