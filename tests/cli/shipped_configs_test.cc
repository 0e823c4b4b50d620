// Every run config shipped in experiments/ is one a user can start: `run --plan-only` accepts it
// and every variant's memory plan fits its budgets on the machine the README describes.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>

#include "tests/support/run_binary.h"

namespace fs = std::filesystem;

namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ShippedConfigs, EveryVariantPlansWithinItsBudgets) {
  const fs::path dir = fs::path(H2OFLEX_SOURCE_DIR) / "experiments";
  size_t configs = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++configs;
    const YAML::Node variants = YAML::LoadFile(entry.path().string())["variants"];
    const size_t expected = variants ? variants.size() : 1;
    const auto o =
        h2oflex::testing_support::run_h2oflex("run " + entry.path().string() + " --plan-only");
    EXPECT_EQ(o.exit_code, 0) << entry.path() << ":\n" << o.output;
    EXPECT_EQ(count_of(o.output, "planned:"), expected) << entry.path() << ":\n" << o.output;
  }
  EXPECT_GE(configs, 5u);  // quickstart, quickstart_llama, kv_on_disk, compress_weight, ...
}

}  // namespace
