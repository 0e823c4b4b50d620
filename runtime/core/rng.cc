#include "runtime/core/rng.h"

#include <cmath>

namespace h2oflex {

std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  const Philox4 p = philox4x32_10(key, counter_hi, counter_lo);
  return {p.w[0], p.w[1], p.w[2], p.w[3]};
}

float normal_at(uint64_t seed, uint64_t stream, uint64_t index) {
  // One Philox call yields two Box-Muller pairs; element i uses pair (i / 4) and word i % 4.
  const auto w = philox4x32(seed, stream, index / 4);
  const int lane = static_cast<int>(index % 4);
  const float u1 = uniform_open01(w[(lane / 2) * 2]);
  const float u2 = uniform_open01(w[(lane / 2) * 2 + 1]);
  const float r = std::sqrt(-2.0f * std::log(u1));
  const float theta = 6.28318530717958647692f * u2;
  return (lane % 2 == 0) ? r * std::cos(theta) : r * std::sin(theta);
}

namespace {
// The four normals of Philox block `block`: exactly normal_at(seed, stream, 4 * block + lane).
inline void normal_quad(uint64_t seed, uint64_t stream, uint64_t block, float out[4]) {
  const auto w = philox4x32(seed, stream, block);
  for (int pair = 0; pair < 2; ++pair) {
    const float r = std::sqrt(-2.0f * std::log(uniform_open01(w[2 * pair])));
    const float theta = 6.28318530717958647692f * uniform_open01(w[2 * pair + 1]);
    out[2 * pair] = r * std::cos(theta);
    out[2 * pair + 1] = r * std::sin(theta);
  }
}
}  // namespace

void fill_normal(float* out, uint64_t n, uint64_t seed, uint64_t stream, uint64_t first, float mean,
                 float std) {
  if (n == 0) return;
  const uint64_t first_block = first / 4, last_block = (first + n - 1) / 4;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t b = static_cast<int64_t>(first_block); b <= static_cast<int64_t>(last_block); ++b) {
    float quad[4];
    normal_quad(seed, stream, static_cast<uint64_t>(b), quad);
    for (uint64_t lane = 0; lane < 4; ++lane) {
      const uint64_t index = static_cast<uint64_t>(b) * 4 + lane;
      if (index >= first && index < first + n) out[index - first] = mean + std * quad[lane];
    }
  }
}

uint64_t stable_hash(const char* s, uint64_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint64_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace h2oflex
