#include <gtest/gtest.h>

#include <string>

#include "offload/weights/xxhash64.h"
#include "tests/offload/test_support.h"

namespace h2oflex {
namespace {

// Reference values published with xxHash (XXH64, seed 0 unless noted).
TEST(Xxh64, MatchesReferenceValues) {
  EXPECT_EQ(Xxh64::hash("", 0), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(Xxh64::hash("a", 1), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(Xxh64::hash("abc", 3), 0x44BC2CF5AD770999ull);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(Xxh64::hash(fox.data(), fox.size()), 0x0B242D361FDA71BCull);
}

TEST(Xxh64, StreamingEqualsOneShot) {
  const auto data = testing_support::random_bytes(10000, 3);
  const uint64_t whole = Xxh64::hash(data.data(), data.size(), 42);
  for (size_t step : {1u, 7u, 31u, 32u, 33u, 1000u}) {
    Xxh64 h(42);
    for (size_t i = 0; i < data.size(); i += step) {
      h.update(data.data() + i, std::min(step, data.size() - i));
    }
    EXPECT_EQ(h.digest(), whole) << step;
  }
}

}  // namespace
}  // namespace h2oflex
