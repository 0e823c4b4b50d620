// Helpers shared by the offload, fault and experiments tests: a temporary directory and random
// bytes.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace h2oflex::testing_support {

// A fresh directory removed (with its contents) at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& parent = "") {
    std::string base = parent.empty() ? std::filesystem::temp_directory_path().string() : parent;
    std::string templ = base + "/h2oflex-test-XXXXXX";
    char* made = mkdtemp(templ.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed in " + base);
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  size_t entries() const {
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(path_);
         it != std::filesystem::directory_iterator(); ++it) {
      ++n;
    }
    return n;
  }

 private:
  std::string path_;
};

inline std::vector<unsigned char> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> out(n);
  for (auto& b : out) b = static_cast<unsigned char>(rng());
  return out;
}

// Reads a file range through a separate buffered descriptor (an oracle independent of the engine).
// Works for unlinked files through /proc/self/fd.
inline std::vector<unsigned char> pread_buffered(int fd, uint64_t offset, size_t n) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  const int other = ::open(proc.c_str(), O_RDONLY);
  if (other < 0) throw std::runtime_error("cannot reopen " + proc);
  std::vector<unsigned char> out(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(other, out.data() + done, n - done, offset + done);
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  ::close(other);
  out.resize(done);
  return out;
}

inline void pwrite_buffered(int fd, uint64_t offset, const void* data, size_t n) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  const int other = ::open(proc.c_str(), O_WRONLY);
  if (other < 0) throw std::runtime_error("cannot reopen " + proc);
  const ssize_t w = ::pwrite(other, data, n, offset);
  ::fsync(other);
  ::close(other);
  if (w != static_cast<ssize_t>(n)) throw std::runtime_error("short pwrite");
}

}  // namespace h2oflex::testing_support
