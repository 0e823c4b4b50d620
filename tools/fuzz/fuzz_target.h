// One fuzz target per file. Built alone with libFuzzer (H2OFLEX_FUZZ_MAIN), a target is the
// binary's LLVMFuzzerTestOneInput; included by the replay test, each gets its own name so all of
// them link together and every committed input is run by the ordinary test suite.
//
// A target's contract: bad input raises InputError (exit code 2 in the CLI) or, where files are
// read, IoError; any other exception, a crash or a sanitizer report is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#ifdef H2OFLEX_FUZZ_MAIN
#define H2OFLEX_FUZZ_TARGET(name) \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#else
#define H2OFLEX_FUZZ_TARGET(name) int fuzz_##name(const uint8_t* data, size_t size)
#endif

namespace h2oflex::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process's own for files a target must hand to a loader by path, removed
// when the process exits.
inline const std::filesystem::path& scratch_dir() {
  struct OwnedDir {
    std::filesystem::path path;
    ~OwnedDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const OwnedDir dir = [] {
    auto d =
        std::filesystem::temp_directory_path() / ("h2oflex-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return OwnedDir{d};
  }();
  return dir.path;
}

inline std::filesystem::path write_scratch(const std::string& name, std::string_view bytes) {
  const auto path = scratch_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Input split at the first NUL byte: two files or fields from one fuzz input.
inline std::pair<std::string_view, std::string_view> split_at_nul(std::string_view s) {
  const size_t nul = s.find('\0');
  if (nul == std::string_view::npos) return {s, {}};
  return {s.substr(0, nul), s.substr(nul + 1)};
}

}  // namespace h2oflex::fuzz
