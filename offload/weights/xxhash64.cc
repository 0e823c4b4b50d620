#include "offload/weights/xxhash64.h"

#include <cstring>

namespace h2oflex {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;

inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only (x86-64, aarch64)
  return v;
}
inline uint32_t load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}
inline uint64_t merge(uint64_t acc, uint64_t val) {
  acc ^= round(0, val);
  return acc * kP1 + kP4;
}

}  // namespace

Xxh64::Xxh64(uint64_t seed) : seed_(seed) {
  acc_[0] = seed + kP1 + kP2;
  acc_[1] = seed + kP2;
  acc_[2] = seed;
  acc_[3] = seed - kP1;
}

void Xxh64::update(const void* data, size_t length) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  total_len_ += length;
  if (pending_len_ + length < 32) {
    std::memcpy(pending_ + pending_len_, p, length);
    pending_len_ += length;
    return;
  }
  if (pending_len_ > 0) {
    const size_t fill = 32 - pending_len_;
    std::memcpy(pending_ + pending_len_, p, fill);
    for (int i = 0; i < 4; ++i) acc_[i] = round(acc_[i], load64(pending_ + 8 * i));
    p += fill;
    length -= fill;
    pending_len_ = 0;
  }
  uint64_t a0 = acc_[0], a1 = acc_[1], a2 = acc_[2], a3 = acc_[3];
  while (length >= 32) {
    a0 = round(a0, load64(p));
    a1 = round(a1, load64(p + 8));
    a2 = round(a2, load64(p + 16));
    a3 = round(a3, load64(p + 24));
    p += 32;
    length -= 32;
  }
  acc_[0] = a0;
  acc_[1] = a1;
  acc_[2] = a2;
  acc_[3] = a3;
  std::memcpy(pending_, p, length);
  pending_len_ = length;
}

uint64_t Xxh64::digest() const {
  uint64_t h;
  if (total_len_ >= 32) {
    h = rotl(acc_[0], 1) + rotl(acc_[1], 7) + rotl(acc_[2], 12) + rotl(acc_[3], 18);
    for (int i = 0; i < 4; ++i) h = merge(h, acc_[i]);
  } else {
    h = seed_ + kP5;
  }
  h += total_len_;
  const unsigned char* p = pending_;
  size_t n = pending_len_;
  while (n >= 8) {
    h ^= round(0, load64(p));
    h = rotl(h, 27) * kP1 + kP4;
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    h ^= static_cast<uint64_t>(load32(p)) * kP1;
    h = rotl(h, 23) * kP2 + kP3;
    p += 4;
    n -= 4;
  }
  while (n > 0) {
    h ^= static_cast<uint64_t>(*p) * kP5;
    h = rotl(h, 11) * kP1;
    ++p;
    --n;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t Xxh64::hash(const void* data, size_t length, uint64_t seed) {
  Xxh64 x(seed);
  x.update(data, length);
  return x.digest();
}

}  // namespace h2oflex
