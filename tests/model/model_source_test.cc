// What a Hugging Face directory's weights are keyed by and checked against (issue 14): the key
// follows the content, so a changed checkpoint never reuses the layout of the old one (defect
// 1), and tensors config.json does not describe are refused by name (defect 9).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model_layout.h"
#include "experiments/common/model_source.h"
#include "runtime/core/error.h"
#include "tests/support/scratch_dir.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

const fs::path kFixture = fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/opt/tiny-postln";

class ModelSourceTest : public testing_support::ScratchDirTest {
 protected:
  fs::path copy_fixture() {
    const fs::path m = dir() / "model";
    fs::create_directories(m);
    for (const auto& e : fs::directory_iterator(kFixture)) {
      fs::copy_file(e.path(), m / e.path().filename());
    }
    return m;
  }
  static void flip_last_byte(const fs::path& file) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    f.seekp(-1, std::ios::end);
    c ^= 0x5a;
    f.write(&c, 1);
  }
};

TEST_F(ModelSourceTest, KeyChangesWithTheCheckpointsContent) {
  const fs::path m = copy_fixture();
  const std::string before = open_model_source(m.string(), false, 0).key;
  EXPECT_EQ(open_model_source(m.string(), false, 0).key, before) << "the key must be stable";
  // New values in place (same header, same size), written later.
  const fs::path st = m / "model.safetensors";
  const auto written = fs::last_write_time(st);
  flip_last_byte(st);
  fs::last_write_time(st, written + std::chrono::seconds(5));
  const std::string after = open_model_source(m.string(), false, 0).key;
  EXPECT_NE(after, before);
  // The layout lives in the same directory (rebuilt in place, the old one does not pile up).
  EXPECT_EQ(model_layout_dir("/d", after, DType::F32), model_layout_dir("/d", before, DType::F32));
  // Only the fingerprint is left out: a converted copy's key ("...:content=X:bf16") keeps its
  // own directory.
  EXPECT_NE(model_layout_dir("/d", "/m:content=0123:bf16", DType::F32),
            model_layout_dir("/d", "/m:content=0123", DType::F32));
}

TEST_F(ModelSourceTest, ChangedCheckpointRebuildsItsLayout) {
  const fs::path m = copy_fixture();
  const fs::path disk = dir() / "disk";
  auto build = [&](bool& rebuilt) {
    const ModelSource src = open_model_source(m.string(), false, 0);
    const std::string where = model_layout_dir(disk.string(), src.key, DType::F32);
    auto layout =
        open_or_build_model_layout(where, src.key, *src.model, DType::F32, src.producer, {});
    rebuilt = layout->model_key() == src.key + ":f32";  // the key plus the dtype
    return where;
  };
  bool ok = false;
  const std::string where = build(ok);
  ASSERT_TRUE(ok);
  // Marked old, so a rewrite shows whatever the clock's resolution.
  const fs::path index = where + "/weights.index.json";
  const auto marked = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(index, marked);
  // A new config.json (same shapes) is a different checkpoint.
  std::ofstream(m / "config.json", std::ios::app) << "\n";
  build(ok);
  ASSERT_TRUE(ok) << "the layout's key is not the checkpoint's";
  EXPECT_NE(fs::last_write_time(index), marked) << "the old layout was reused";
}

TEST_F(ModelSourceTest, TensorsTheConfigDoesNotDescribeAreRefusedByName) {
  const fs::path m = copy_fixture();
  std::ifstream in(m / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string from = "\"num_hidden_layers\": 2";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "\"num_hidden_layers\": 1");
  std::ofstream(m / "config.json", std::ios::trunc) << text;
  try {
    open_model_source(m.string(), false, 0);
    FAIL() << "a truncated model was accepted";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("model.decoder.layers.1."), std::string::npos) << msg;
    EXPECT_NE(msg.find("config.json says 1 layers"), std::string::npos) << msg;
  }
}

// A GGUF file is keyed as a checkpoint directory is: its name, size, modification time and
// header, so new tensor values written in place give a new key and content (a run rebuilds the
// layout it built from the old values), and an unchanged file keeps both.
TEST_F(ModelSourceTest, GgufKeyAndContentFollowTheFile) {
  const fs::path g = dir() / "m.gguf";
  fs::copy_file(fs::path(H2OFLEX_SOURCE_DIR) / "tests/fixtures/gguf/llama-q4_0-tied.gguf", g);
  const ModelSource before = open_model_source(g.string(), std::nullopt, 0);
  EXPECT_EQ(before.content.rfind("gguf:", 0), 0u) << before.content;
  EXPECT_EQ(open_model_source(g.string(), std::nullopt, 0).key, before.key);
  EXPECT_EQ(open_model_source(g.string(), std::nullopt, 0).content, before.content);
  const auto written = fs::last_write_time(g);
  flip_last_byte(g);  // a value of the last tensor
  fs::last_write_time(g, written + std::chrono::seconds(5));
  const ModelSource after = open_model_source(g.string(), std::nullopt, 0);
  EXPECT_NE(after.key, before.key);
  EXPECT_NE(after.content, before.content);
  EXPECT_EQ(model_layout_dir("/d", after.key, DType::F32),
            model_layout_dir("/d", before.key, DType::F32));
  // dummy: true runs the metadata's shape: its content names the file's and the seed.
  const ModelSource dummy = open_model_source(g.string(), true, 7);
  EXPECT_TRUE(dummy.dummy);
  EXPECT_NE(dummy.content.find(":seed=7"), std::string::npos) << dummy.content;
}

}  // namespace
}  // namespace h2oflex
