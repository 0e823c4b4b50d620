// Replays every committed fuzz input (the seed corpora and each crash a fuzzer found, kept
// after its fix under tools/fuzz/crashes/<target>/) through the fuzz targets, in the ordinary
// build: an input that throws anything but the target's input errors, or crashes, fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tools/fuzz/chat_template.cc"
#include "tools/fuzz/gguf_header.cc"
#include "tools/fuzz/hf_config.cc"
#include "tools/fuzz/request_line.cc"
#include "tools/fuzz/run_config.cc"
#include "tools/fuzz/safetensors_header.cc"
#include "tools/fuzz/tokenizer_files.cc"
#include "tools/fuzz/tokenizer_json.cc"

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  int (*run)(const uint8_t*, size_t);
};

const Target kTargets[] = {{"safetensors_header", fuzz_safetensors_header},
                           {"hf_config", fuzz_hf_config},
                           {"run_config", fuzz_run_config},
                           {"request_line", fuzz_request_line},
                           {"tokenizer_files", fuzz_tokenizer_files},
                           {"chat_template", fuzz_chat_template},
                           {"tokenizer_json", fuzz_tokenizer_json},
                           {"gguf_header", fuzz_gguf_header}};

class FuzzReplay : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzReplay, EveryCommittedInputIsHandled) {
  const fs::path root = fs::path(H2OFLEX_SOURCE_DIR) / "tools/fuzz";
  size_t seeds = 0;
  for (const char* set : {"corpus", "crashes"}) {
    const fs::path dir = root / set / GetParam().name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      EXPECT_NO_THROW(GetParam().run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))
          << entry.path();
      if (std::string(set) == "corpus") ++seeds;
    }
  }
  EXPECT_GT(seeds, 0u) << "no seed corpus for " << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(kTargets),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
