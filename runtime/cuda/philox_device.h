// Runs the device Philox on the GPU so tests can compare its words with the host generator.
#pragma once

#include <cstdint>
#include <vector>

namespace h2oflex::cuda {

// Words of philox4x32(key, counter_hi, first_lo + i) for i in [0, count), 4 per counter.
std::vector<uint32_t> philox_words_on_device(uint64_t key, uint64_t counter_hi, uint64_t first_lo,
                                             int64_t count);

}  // namespace h2oflex::cuda
