// Philox-4x32-10 (Salmon et al., SC'11) and the (0, 1) uniform mapping, compiled for both host
// and device: the CPU backend, dummy weights and the CUDA sampler draw the very same numbers.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define H2OFLEX_HOST_DEVICE __host__ __device__
#else
#define H2OFLEX_HOST_DEVICE
#endif

namespace h2oflex {

struct Philox4 {
  uint32_t w[4];
};

// Counter words (lo low, lo high, hi low, hi high), key words (low, high): the layout of the
// Random123 known-answer vectors, which the tests check.
H2OFLEX_HOST_DEVICE inline Philox4 philox4x32_10(uint64_t key, uint64_t counter_hi,
                                                 uint64_t counter_lo) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;  // multipliers
  const uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(m0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(m1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += w0;
    k1 += w1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in (0, 1) from the top 24 bits of a word (never exactly 0 or 1).
H2OFLEX_HOST_DEVICE inline float uniform_open01(uint32_t x) {
  return (static_cast<float>(x >> 8) + 0.5f) * (1.0f / 16777216.0f);
}

}  // namespace h2oflex
