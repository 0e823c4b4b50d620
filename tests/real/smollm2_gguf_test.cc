// SmolLM2-135M-Instruct read natively from its Q4_1 GGUF file (the one tools/fetch_smollm2.sh
// converts into the model directory with tools/gguf_to_hf.py): the same weights bit for bit as
// the converted directory (both dequantize the same blocks exactly), hence the same logits and
// greedy tokens — which are Hugging Face transformers' (tests/fixtures/smollm2).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "models/gguf/gguf_checkpoint.h"
#include "runtime/core/timer.h"
#include "tests/real/smollm2.h"

namespace h2oflex::real {
namespace {

std::string smollm2_gguf() {
  const std::filesystem::path file = H2OFLEX_SMOLLM2_GGUF;
  if (!std::filesystem::exists(file)) {
    ADD_FAILURE() << "the SmolLM2 GGUF file " << file
                  << " is missing: run tools/fetch_smollm2.sh (test.sh does) and build again";
    return "";
  }
  return file.string();
}

TEST(SmolLM2Gguf, WeightsLogitsAndGreedyTokensEqualTheConvertedDirectory) {
  const std::string gguf = smollm2_gguf();
  ASSERT_FALSE(gguf.empty());
  ASSERT_FALSE(smollm2_dir().empty());
  Stopwatch dir_watch;
  const LoadedModel& dir = smollm2_model(DType::F32);
  const double dir_s = dir_watch.elapsed();
  Stopwatch gguf_watch;
  const ModelSource src = open_model_source(gguf, std::nullopt, 0);
  const ModelWeights weights = load_model_weights(*src.model, DType::F32, src.producer);
  const double gguf_s = gguf_watch.elapsed();
  std::printf("load (f32): GGUF %.2f s, converted directory %.2f s\n", gguf_s, dir_s);
  EXPECT_NE(src.description.find("GGUF weights Q4_1 x 210"), std::string::npos) << src.description;

  // The same specs in the same order, every tensor bit for bit.
  const auto& specs = src.model->weight_specs();
  ASSERT_EQ(specs.size(), dir.source.model->weight_specs().size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const Tensor& a = weights.tensors[i];
    const Tensor& b = dir.weights.tensors[i];
    ASSERT_EQ(specs[i].name, dir.source.model->weight_specs()[i].name);
    ASSERT_EQ(a.numel(), b.numel()) << specs[i].name;
    EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)), 0)
        << specs[i].name << " differs from the converted directory's";
  }

  // Stored as bf16 (unpacked a few million values at a time, then rounded): the directory's
  // bf16 weights, bit for bit.
  {
    const ModelWeights bf16 = load_model_weights(*src.model, DType::BF16, src.producer);
    const LoadedModel& dir16 = smollm2_model(DType::BF16);
    for (size_t i = 0; i < specs.size(); ++i) {
      const Tensor& a = bf16.tensors[i];
      const Tensor& b = dir16.weights.tensors[i];
      ASSERT_EQ(a.numel() * dtype_size(a.dtype()), b.numel() * dtype_size(b.dtype()));
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.numel() * dtype_size(a.dtype())), 0)
          << specs[i].name << " (bf16) differs from the converted directory's";
    }
  }

  // A chat prompt: the greedy tokens are transformers', the logits the directory's (one prefill
  // of it: the weights being equal, more steps would compare the same arithmetic again).
  for (const auto& p : smollm2_expected()["prompts"]) {
    if (p["name"] != "chat-capital") continue;
    const auto ids = p["ids"].get<std::vector<int32_t>>();
    GenerationSettings g;
    g.gen_len = smollm2_expected()["greedy_steps"].get<int>();
    g.stop_at_eos = false;
    g.compute = ops::ComputeType::F32;
    g.kv_dtype = DType::F32;
    std::vector<float> logits;
    g.on_logits = [&](int step, const Tensor& t) {
      if (step == 0) logits.assign(t.data<float>(), t.data<float>() + t.numel());
    };
    const auto tokens = generate_in_ram(*src.model, weights, {ids}, g).tokens.at(0);
    EXPECT_EQ(tokens, p["greedy_tokens"].get<std::vector<int32_t>>()) << "(transformers)";
    EXPECT_LE(relative_logit_error(p["last_logits"], logits), 1e-4) << "(transformers)";
    const GreedyRun from_dir = greedy_alone(ops::ComputeType::F32, ids, 1);
    double worst = 0, largest = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      worst = std::max(worst, double(std::abs(logits[i] - from_dir.last_logits.at(i))));
      largest = std::max(largest, double(std::abs(from_dir.last_logits[i])));
    }
    std::printf("logits vs the converted directory: relative difference %.2e\n", worst / largest);
    EXPECT_LE(worst / largest, 1e-6);
    EXPECT_EQ(tokens.front(), from_dir.tokens.front());
  }
}

// weight_format: stored (the default): the layers' 210 matrices stay in the file's Q4_1 blocks
// and the tied token table in its Q8_0 blocks, their bytes the file's, and the engine computes
// on them (the table's row lookups unpack the gathered rows; as the head it is a packed linear)
// — the greedy tokens and last-position logits of every reference prompt (5 to 600 tokens, chat
// and plain) are transformers'.
TEST(SmolLM2Gguf, ComputedOnItsQ4_1BlocksGivesTransformersTokensAndLogits) {
  const std::string gguf = smollm2_gguf();
  ASSERT_FALSE(gguf.empty());
  const ModelSource src = open_model_source(gguf, std::nullopt, 0);
  const std::shared_ptr<const GgufCheckpoint> ckpt = GgufCheckpoint::open(gguf);
  for (DType dtype : {DType::F32, DType::BF16}) {
    const std::vector<StorageFormat> formats =
        weight_formats(*src.model, dtype, WeightFormat{}, false);
    const ModelWeights weights = load_model_weights(*src.model, formats, src.producer, src.packed);
    const auto& specs = src.model->weight_specs();
    int q4_1 = 0;
    uint64_t layer_bytes = 0, file_layer_bytes = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (weights.tensors[i].packed() != PackedFormat::Q4_1) continue;
      ++q4_1;
      layer_bytes += weights.tensors[i].nbytes();
      file_layer_bytes += ckpt->tensor_of(specs[i]).nbytes;
    }
    EXPECT_EQ(q4_1, 210);
    EXPECT_EQ(layer_bytes, file_layer_bytes) << "the blocks are held as the file stores them";
    const Tensor& table = weights.named(*src.model, "embed_tokens.weight");
    EXPECT_EQ(table.packed(), PackedFormat::Q8_0);
    size_t table_index = 0;
    while (specs[table_index].name != "embed_tokens.weight") ++table_index;
    EXPECT_EQ(table.nbytes(), ckpt->tensor_of(specs[table_index]).nbytes);

    const ops::ComputeType ct =
        dtype == DType::F32 ? ops::ComputeType::F32 : ops::ComputeType::BF16;
    int same_tokens = 0, prompts = 0;
    for (const auto& p : smollm2_expected()["prompts"]) {
      const auto ids = p["ids"].get<std::vector<int32_t>>();
      GenerationSettings g;
      g.gen_len = smollm2_expected()["greedy_steps"].get<int>();
      g.stop_at_eos = false;
      g.compute = ct;
      g.kv_dtype = dtype;
      std::vector<float> logits;
      g.on_logits = [&](int step, const Tensor& t) {
        if (step == 0) logits.assign(t.data<float>(), t.data<float>() + t.numel());
      };
      const auto tokens = generate_in_ram(*src.model, weights, {ids}, g).tokens.at(0);
      ++prompts;
      same_tokens += tokens == p["greedy_tokens"].get<std::vector<int32_t>>() ? 1 : 0;
      const double err = relative_logit_error(p["last_logits"], logits);
      std::printf("%s %s: logits relative error %.2e\n", dtype_name(dtype).data(),
                  p["name"].get<std::string>().c_str(), err);
      if (dtype == DType::F32) {
        EXPECT_EQ(tokens, p["greedy_tokens"].get<std::vector<int32_t>>()) << p["name"];
        EXPECT_LE(err, 1e-4) << p["name"];
      } else {
        EXPECT_LE(err, 2e-2) << p["name"] << " (bf16 operands)";
      }
    }
    EXPECT_GE(prompts, 8);
    if (dtype == DType::BF16) EXPECT_GE(same_tokens, 6) << "bf16: tokens equal on 6 of 8 or more";
  }
}

}  // namespace
}  // namespace h2oflex::real
