// Reads every tensor of the committed Hugging Face fixtures (single file, sharded, fp16) and checks
// it against values recorded from Python's safetensors library in expected.json.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "models/loaders/hf_checkpoint.h"
#include "models/loaders/hf_config.h"
#include "models/loaders/safetensors.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

using testing::fixture_dir;
using testing::read_json;

const nlohmann::json& expected() {
  static const nlohmann::json doc = read_json(fixture_dir() / "expected.json");
  return doc;
}

std::vector<std::string> checkpoint_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : expected()["checkpoints"].items()) names.push_back(name);
  return names;
}

DType dtype_from(const std::string& s) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  return DType::BF16;
}

std::vector<float> read_f32(const SafetensorsReader& r, const TensorInfo& info) {
  std::vector<float> v(info.nbytes / dtype_size(info.dtype));
  r.read(info, DType::F32, v.data());
  return v;
}

TEST(SafetensorsFixture, ExpectedJsonListsAllCheckpointKinds) {
  const auto& ck = expected()["checkpoints"];
  bool sharded = false, fp16 = false, single = false;
  for (const auto& [name, c] : ck.items()) {
    sharded |= c["sharded"].get<bool>();
    single |= !c["sharded"].get<bool>();
    fp16 |= c["dtype"] == "float16";
  }
  EXPECT_TRUE(sharded && fp16 && single);
}

class FixtureCheckpoint : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureCheckpoint, EveryTensorMatchesPythonRecord) {
  const auto& ck = expected()["checkpoints"][GetParam()];
  const auto reader = SafetensorsReader::open(fixture_dir() / ck["dir"].get<std::string>());
  const auto& want = ck["tensors"];

  std::set<std::string> seen;
  for (const TensorInfo& info : reader.tensors()) seen.insert(info.name);
  std::set<std::string> listed;
  for (const auto& [name, _] : want.items()) listed.insert(name);
  EXPECT_EQ(seen, listed) << "tensor names differ from the Python listing";
  EXPECT_EQ(reader.find("lm_head.weight"), nullptr) << "lm_head is tied, not stored";

  for (const auto& [name, w] : want.items()) {
    SCOPED_TRACE(name);
    const TensorInfo& info = reader.get(name);
    EXPECT_EQ(info.dtype, dtype_from(w["dtype"].get<std::string>()));
    EXPECT_EQ(info.shape, w["shape"].get<Shape>());
    EXPECT_EQ(info.file.filename().string(), w["file"].get<std::string>());
    EXPECT_EQ(info.nbytes, static_cast<uint64_t>(shape_numel(info.shape)) * dtype_size(info.dtype));

    const std::vector<float> v = read_f32(reader, info);
    double sum = 0, abs_sum = 0;
    for (float x : v) {
      sum += x;
      abs_sum += std::fabs(x);
    }
    const double tol = 1e-9 * w["abs_sum"].get<double>() + 1e-12;
    EXPECT_NEAR(sum, w["sum"].get<double>(), tol);
    EXPECT_NEAR(abs_sum, w["abs_sum"].get<double>(), tol);
    const auto first = w["first"].get<std::vector<double>>();
    ASSERT_LE(first.size(), v.size());
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_EQ(v[i], static_cast<float>(first[i])) << "element " << i;
    }
  }
}

TEST_P(FixtureCheckpoint, OpensAsHfCheckpointWithConfigShapes) {
  const auto& ck = expected()["checkpoints"][GetParam()];
  const auto cp = HfCheckpoint::open(fixture_dir() / ck["dir"].get<std::string>());
  const HfOptConfig c = read_hf_opt_config(cp.dir());
  EXPECT_EQ(c.vocab_size, 1000);
  EXPECT_EQ(c.hidden_size, 64);
  // Names without the "model." prefix resolve too; shapes follow the config.
  cp.get("decoder.embed_tokens.weight", {c.vocab_size, c.word_embed_proj_dim});
  cp.get("decoder.embed_positions.weight", {c.max_position_embeddings + 2, c.hidden_size});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l) + ".";
    cp.get(p + "self_attn.q_proj.weight", {c.hidden_size, c.hidden_size});
    cp.get(p + "fc1.weight", {c.ffn_dim, c.hidden_size});
    cp.get(p + "fc2.bias", {c.hidden_size});
  }
  if (c.word_embed_proj_dim != c.hidden_size) {
    cp.get("decoder.project_in.weight", {c.hidden_size, c.word_embed_proj_dim});
    cp.get("decoder.project_out.weight", {c.word_embed_proj_dim, c.hidden_size});
  }
  EXPECT_EQ(cp.find("decoder.final_layer_norm.weight") != nullptr, c.do_layer_norm_before);
  EXPECT_THROW(cp.get("decoder.embed_tokens.weight", {c.vocab_size, c.hidden_size + 1}),
               InputError);
}

INSTANTIATE_TEST_SUITE_P(All, FixtureCheckpoint, ::testing::ValuesIn(checkpoint_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) ch = std::isalnum(ch) ? ch : '_';
                           return s;
                         });

TEST(SafetensorsFixture, ShardedHoldsSameTensorsAsSingleFile) {
  const auto single = SafetensorsReader::open(fixture_dir() / "tiny-postln");
  const auto sharded = SafetensorsReader::open(fixture_dir() / "tiny-postln-sharded");
  EXPECT_EQ(sharded.source().filename(), SafetensorsReader::kIndexName);
  EXPECT_GE(sharded.files().size(), 2u);
  ASSERT_EQ(single.tensors().size(), sharded.tensors().size());
  for (const TensorInfo& a : single.tensors()) {
    SCOPED_TRACE(a.name);
    const TensorInfo& b = sharded.get(a.name);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(read_f32(single, a), read_f32(sharded, b));
  }
}

// The fp16 copy is the fp32 model rounded to nearest: within half an fp16 ulp everywhere.
TEST(SafetensorsFixture, Fp16CopyEqualsFp32WithinFp16Rounding) {
  const auto f32 = SafetensorsReader::open(fixture_dir() / "tiny-preln");
  const auto f16 = SafetensorsReader::open(fixture_dir() / "tiny-preln-fp16");
  ASSERT_EQ(f32.tensors().size(), f16.tensors().size());
  for (const TensorInfo& a : f32.tensors()) {
    SCOPED_TRACE(a.name);
    const TensorInfo& b = f16.get(a.name);
    EXPECT_EQ(b.dtype, DType::F16);
    const auto x = read_f32(f32, a);
    const auto y = read_f32(f16, b);
    ASSERT_EQ(x.size(), y.size());
    size_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double half_ulp =
          std::max(std::fabs(x[i]) * std::ldexp(1.0, -11), std::ldexp(1.0, -25));
      bad += std::fabs(double(x[i]) - double(y[i])) > half_ulp;
    }
    EXPECT_EQ(bad, 0u);
  }
}

// Reading the fp32 file as f16 / bf16 rounds each value; reading fp16 as f16 is bit-exact.
TEST(SafetensorsFixture, ConvertsOnRead) {
  const auto f32 = SafetensorsReader::open(fixture_dir() / "tiny-preln");
  const auto f16 = SafetensorsReader::open(fixture_dir() / "tiny-preln-fp16");
  const TensorInfo& a = f32.get("model.decoder.layers.1.fc1.weight");
  const auto x = read_f32(f32, a);

  const Tensor as_bf16 = f32.read(a, DType::BF16);
  const Tensor as_f16 = f32.read(a, DType::F16);
  EXPECT_EQ(as_bf16.shape(), a.shape);
  const Tensor bf16_back = to_dtype(as_bf16, DType::F32);
  const Tensor f16_back = to_dtype(as_f16, DType::F32);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_LE(std::fabs(bf16_back.data<float>()[i] - x[i]), std::fabs(x[i]) * std::ldexp(1.0, -8))
        << i;
    ASSERT_LE(std::fabs(f16_back.data<float>()[i] - x[i]),
              std::max(std::fabs(x[i]) * std::ldexp(1.0, -11), std::ldexp(1.0, -25)))
        << i;
  }
  // The fp16 file read as f16 must match the f32 file rounded to f16 by the reader.
  const Tensor stored_f16 = f16.read(f16.get(a.name), DType::F16);
  EXPECT_EQ(0, std::memcmp(stored_f16.raw(), as_f16.raw(), as_f16.nbytes()));
}

}  // namespace
}  // namespace h2oflex
