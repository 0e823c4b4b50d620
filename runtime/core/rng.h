// Counter-based random numbers (Philox-4x32-10): any element of any stream can be produced
// independently, so dummy weights can be generated tensor by tensor, part by part, in parallel,
// and always come out the same.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/core/philox.h"

namespace h2oflex {

// Four 32-bit random words for (key, counter).
std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo);

// Standard normal for element `index` of stream (seed, stream): deterministic, order-free.
float normal_at(uint64_t seed, uint64_t stream, uint64_t index);

// Fills out[0..n) with normal(mean, std) values for indices [first, first + n) of a stream.
void fill_normal(float* out, uint64_t n, uint64_t seed, uint64_t stream, uint64_t first, float mean,
                 float std);

// Stable 64-bit hash of a string (FNV-1a), used to derive per-tensor streams from names.
uint64_t stable_hash(const char* s, uint64_t n);

}  // namespace h2oflex
