// Types shared by the op interface (runtime/ops) and its backends (runtime/cpu, runtime/cuda),
// kept on the ground floor so the backends need not include the interface above them.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/tensor.h"

namespace h2oflex::ops {

enum class ComputeType : uint8_t { F32, BF16, F16 };

// Sampling: temperature and nucleus (top-p) filtering from a counter-based stream.
struct SampleParams {
  float temperature = 1.0f;
  float top_p = 1.0f;
  uint64_t seed = 0;
};

}  // namespace h2oflex::ops
