// `convert`: a Hugging Face checkpoint into the offload layout, loaded back with checksums.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/generator.h"
#include "experiments/common/model_source.h"
#include "experiments/convert/convert_command.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

const fs::path kFixture = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt/tiny-postln";

// The conversion writes into dir() itself (an existing, empty directory).
class Convert : public testing_support::ScratchDirTest {
 protected:
  std::vector<std::vector<int32_t>> greedy(const std::string& model) {
    const ModelSource src = open_model_source(model, false, 0);
    const ModelWeights w = load_model_weights(*src.model, DType::F32, src.producer);
    GenerationSettings g;
    g.gen_len = 6;
    g.stop_at_eos = false;
    return generate_in_ram(*src.model, w, {{2, 10, 20, 30}, {2, 7}}, g).tokens;
  }
};

TEST_F(Convert, ConvertedModelGeneratesWhatTheCheckpointGenerates) {
  ASSERT_EQ(run_convert({kFixture.string(), dir().string(), "f32"}), 0);
  EXPECT_TRUE(fs::exists(dir() / "weights.index.json"));
  EXPECT_TRUE(fs::exists(dir() / "config.json"));
  EXPECT_EQ(greedy(dir().string()), greedy(kFixture.string()));
}

// The families convert the same way: a tied, sharded LLaMA and a GPT-NeoX checkpoint.
TEST_F(Convert, FamilyCheckpointsConvertAndGenerateTheSame) {
  const fs::path families = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/families";
  for (const char* name : {"llama-tied-sharded", "neox-partial"}) {
    const fs::path out = dir() / name;
    fs::create_directories(out);
    ASSERT_EQ(run_convert({(families / name).string(), out.string(), "f32"}), 0) << name;
    EXPECT_EQ(greedy(out.string()), greedy((families / name).string())) << name;
  }
}

TEST_F(Convert, Bf16LayoutLoadsIntoF32Compute) {
  ASSERT_EQ(run_convert({kFixture.string(), dir().string(), "bf16"}), 0);
  const ModelSource src = open_model_source(dir().string(), false, 0);
  const ModelWeights w = load_model_weights(*src.model, DType::F32, src.producer);
  const ModelSource ref = open_model_source(kFixture.string(), false, 0);
  const ModelWeights rw = load_model_weights(*ref.model, DType::F32, ref.producer);
  const std::string fc1 = "decoder.layers.0.fc1.weight";
  const Tensor& wa = w.named(*src.model, fc1);
  const float* a = wa.data<float>();
  const float* b = rw.named(*ref.model, fc1).data<float>();
  for (int64_t i = 0; i < wa.numel(); ++i) {
    ASSERT_NEAR(a[i], b[i], std::fabs(b[i]) * 8e-3 + 1e-6) << i;
  }
}

TEST_F(Convert, CorruptedTensorIsDetectedOnLoad) {
  ASSERT_EQ(run_convert({kFixture.string(), dir().string(), "f32"}), 0);
  {
    std::fstream f(dir() / "weights.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 + 17);  // inside a tensor past the first record's start
    char c = 0;
    f.read(&c, 1);
    f.seekp(4096 + 17);
    c ^= 0x40;
    f.write(&c, 1);
  }
  try {
    greedy(dir().string());
    FAIL() << "a flipped byte went unnoticed";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

TEST_F(Convert, MissingCheckpointFailsBeforeWriting) {
  EXPECT_THROW(run_convert({(dir() / "nope").string(), (dir() / "out").string(), "bf16"}),
               InputError);
  EXPECT_FALSE(fs::exists(dir() / "out"));
  EXPECT_THROW(run_convert({kFixture.string(), dir().string(), "int8"}), InputError);
}

// --to inside the source, or a link to it, would write into the checkpoint (issue 14, 6).
TEST_F(Convert, DestinationInsideOrLinkingToTheSourceIsRefused) {
  const fs::path src = dir() / "src";
  fs::create_directories(src);
  for (const auto& e : fs::directory_iterator(kFixture))
    fs::copy_file(e.path(), src / e.path().filename());
  fs::create_directory_symlink(src, dir() / "link");
  const auto before = fs::file_size(src / "model.safetensors");
  for (const fs::path& to : {src / "sub", dir() / "link", dir() / "link" / "sub", src / "."}) {
    try {
      run_convert({src.string(), to.string(), "f32"});
      ADD_FAILURE() << to << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("inside (or links to) the source"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(src / "sub"));
  EXPECT_FALSE(fs::exists(src / "weights.bin"));
  EXPECT_EQ(fs::file_size(src / "model.safetensors"), before);
}

}  // namespace
}  // namespace h2oflex
