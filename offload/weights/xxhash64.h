// XXH64 (Yann Collet's xxHash, 64-bit variant), streaming: checksums of weight records.
#pragma once

#include <cstddef>
#include <cstdint>

namespace h2oflex {

class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0);
  void update(const void* data, size_t length);
  uint64_t digest() const;

  static uint64_t hash(const void* data, size_t length, uint64_t seed = 0);

 private:
  uint64_t acc_[4];
  unsigned char pending_[32];
  size_t pending_len_ = 0;
  uint64_t total_len_ = 0;
  uint64_t seed_;
};

}  // namespace h2oflex
