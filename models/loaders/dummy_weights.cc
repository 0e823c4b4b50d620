#include "models/loaders/dummy_weights.h"

#include <algorithm>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/core/rng.h"

namespace h2oflex {

namespace {
// A normalization's gain (OPT's "layer_norm.weight", LLaMA's "input_layernorm.weight" and
// "norm.weight", NeoX's "final_layer_norm.weight"): 1, so dummy activations keep their scale.
bool is_layer_norm_weight(const std::string& name) {
  const std::string tail = "norm.weight";
  return name.size() >= tail.size() &&
         name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

void dummy_weight_fill(const WeightSpec& spec, uint64_t seed, DType dtype, uint64_t first,
                       uint64_t count, void* dst) {
  constexpr uint64_t kChunk = 1 << 16;
  H2OFLEX_CHECK(dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16,
                "dummy weights must be f32, f16 or bf16");
  const uint64_t stream = stable_hash(spec.name.data(), spec.name.size());
  const int64_t chunks = static_cast<int64_t>((count + kChunk - 1) / kChunk);
  const bool layer_norm_weight = is_layer_norm_weight(spec.name);
  // Chunks are independent (counter-based RNG), so threads can take them in any order.
#pragma omp parallel if (chunks > 1)
  {
    std::vector<float> buf(kChunk);
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const uint64_t done = static_cast<uint64_t>(c) * kChunk;
      const uint64_t n = std::min(kChunk, count - done);
      if (spec.role == WeightRole::Matrix) {
        fill_normal(buf.data(), n, seed, stream, first + done, 0.0f, 0.02f);
      } else {
        std::fill_n(buf.data(), n, layer_norm_weight ? 1.0f : 0.0f);
      }
      switch (dtype) {
        case DType::F32:
          std::copy_n(buf.data(), n, static_cast<float*>(dst) + done);
          break;
        case DType::BF16:
          convert_f32_to_bf16(buf.data(), static_cast<uint16_t*>(dst) + done, n);
          break;
        case DType::F16:
          convert_f32_to_f16(buf.data(), static_cast<uint16_t*>(dst) + done, n);
          break;
        default:
          break;  // checked above
      }
    }
  }
}

WeightProducer dummy_weight_producer(uint64_t seed) {
  return [seed](const WeightSpec& spec, DType dtype, void* dst) {
    dummy_weight_fill(spec, seed, dtype, 0, static_cast<uint64_t>(shape_numel(spec.shape)), dst);
  };
}

}  // namespace h2oflex
