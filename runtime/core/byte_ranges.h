// (offset, length) pieces of a buffer: the changed KV records of a decode step, say.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace h2oflex {

using ByteRanges = std::vector<std::pair<uint64_t, uint64_t>>;

// Sum of the lengths.
inline uint64_t total_length(const ByteRanges& ranges) {
  uint64_t n = 0;
  for (const auto& r : ranges) n += r.second;
  return n;
}

// One piece of a copy whose source and destination layouts differ: `length` bytes from offset
// `src` of the source to offset `dst` of the destination.
struct ByteSpan {
  uint64_t src = 0, dst = 0, length = 0;
};
using ByteSpans = std::vector<ByteSpan>;

inline uint64_t total_length(const ByteSpans& spans) {
  uint64_t n = 0;
  for (const auto& s : spans) n += s.length;
  return n;
}

}  // namespace h2oflex
