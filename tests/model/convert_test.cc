// `convert`: a Hugging Face checkpoint into the offload layout, loaded back with checksums.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "experiments/convert_command.h"
#include "experiments/model_source.h"
#include "runtime/engine/generator.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

const fs::path kFixture = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt/tiny-postln";

class Convert : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("h2oflex-convert-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::vector<int32_t>> greedy(const std::string& model) {
    const ModelSource src = open_model_source(model, false, 0);
    const OptWeights w = load_opt_weights(src.config, DType::F32, src.producer);
    GenerateOptions g;
    g.gen_len = 6;
    g.stop_at_eos = false;
    return generate_in_ram(src.config, w, {{2, 10, 20, 30}, {2, 7}}, g).tokens;
  }
  fs::path dir_;
};

TEST_F(Convert, ConvertedModelGeneratesWhatTheCheckpointGenerates) {
  ASSERT_EQ(run_convert({kFixture.string(), dir_.string(), "f32"}), 0);
  EXPECT_TRUE(fs::exists(dir_ / "weights.index.json"));
  EXPECT_TRUE(fs::exists(dir_ / "config.json"));
  EXPECT_EQ(greedy(dir_.string()), greedy(kFixture.string()));
}

TEST_F(Convert, Bf16LayoutLoadsIntoF32Compute) {
  ASSERT_EQ(run_convert({kFixture.string(), dir_.string(), "bf16"}), 0);
  const ModelSource src = open_model_source(dir_.string(), false, 0);
  const OptWeights w = load_opt_weights(src.config, DType::F32, src.producer);
  const ModelSource ref = open_model_source(kFixture.string(), false, 0);
  const OptWeights rw = load_opt_weights(ref.config, DType::F32, ref.producer);
  const float* a = w.layers[0].fc1_w.data<float>();
  const float* b = rw.layers[0].fc1_w.data<float>();
  for (int64_t i = 0; i < w.layers[0].fc1_w.numel(); ++i) {
    ASSERT_NEAR(a[i], b[i], std::fabs(b[i]) * 8e-3 + 1e-6) << i;
  }
}

TEST_F(Convert, CorruptedTensorIsDetectedOnLoad) {
  ASSERT_EQ(run_convert({kFixture.string(), dir_.string(), "f32"}), 0);
  {
    std::fstream f(dir_ / "weights.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 + 17);  // inside a tensor past the first record's start
    char c = 0;
    f.read(&c, 1);
    f.seekp(4096 + 17);
    c ^= 0x40;
    f.write(&c, 1);
  }
  try {
    greedy(dir_.string());
    FAIL() << "a flipped byte went unnoticed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

TEST_F(Convert, MissingCheckpointFailsBeforeWriting) {
  EXPECT_THROW(run_convert({(dir_ / "nope").string(), (dir_ / "out").string(), "bf16"}),
               InputError);
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  EXPECT_THROW(run_convert({kFixture.string(), dir_.string(), "int8"}), InputError);
}

}  // namespace
}  // namespace h2oflex
