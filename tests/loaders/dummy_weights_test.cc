// Dummy weights come from a counter-based RNG: the same values for any thread count and for any
// split of a tensor into parts, so the fill can run on every core of the machine.
#include "models/loaders/dummy_weights.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <vector>

namespace h2oflex {
namespace {

WeightSpec matrix_spec() {
  // Over the fill's 64 Ki-element chunk several times, with a partial last chunk.
  return WeightSpec{"decoder.layers.3.fc1.weight", Shape{1000, 333}, WeightRole::Matrix, 3};
}

std::vector<uint16_t> fill_bf16(const WeightSpec& spec, int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::vector<uint16_t> out(static_cast<size_t>(shape_numel(spec.shape)));
  dummy_weight_fill(spec, 11, DType::BF16, 0, out.size(), out.data());
  omp_set_num_threads(before);
  return out;
}

TEST(DummyWeights, SameValuesForAnyThreadCountAndAnySplit) {
  const WeightSpec spec = matrix_spec();
  const std::vector<uint16_t> one = fill_bf16(spec, 1);
  EXPECT_EQ(fill_bf16(spec, 2), one);
  EXPECT_EQ(fill_bf16(spec, 7), one);
  // In three uneven parts, as a partial producer asks for them.
  std::vector<uint16_t> parts(one.size());
  const uint64_t cuts[] = {0, 12345, 200001, one.size()};
  for (int i = 0; i < 3; ++i) {
    dummy_weight_fill(spec, 11, DType::BF16, cuts[i], cuts[i + 1] - cuts[i],
                      parts.data() + cuts[i]);
  }
  EXPECT_EQ(parts, one);
  // Not a constant: another seed or another tensor gives other values.
  std::vector<uint16_t> other(one.size());
  dummy_weight_fill(spec, 12, DType::BF16, 0, other.size(), other.data());
  EXPECT_NE(other, one);
}

}  // namespace
}  // namespace h2oflex
