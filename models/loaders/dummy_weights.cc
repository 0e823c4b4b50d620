#include "models/loaders/dummy_weights.h"

#include <algorithm>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/core/rng.h"

namespace h2oflex {

namespace {
bool is_layer_norm_weight(const std::string& name) {
  return name.find("layer_norm.weight") != std::string::npos;
}
}  // namespace

void dummy_weight_fill(const WeightSpec& spec, uint64_t seed, DType dtype, uint64_t first,
                       uint64_t count, void* dst) {
  constexpr uint64_t kChunk = 1 << 16;
  std::vector<float> buf(std::min(count, kChunk));
  const uint64_t stream = stable_hash(spec.name.data(), spec.name.size());
  for (uint64_t done = 0; done < count; done += kChunk) {
    const uint64_t n = std::min(kChunk, count - done);
    if (spec.role == WeightRole::Matrix) {
      fill_normal(buf.data(), n, seed, stream, first + done, 0.0f, 0.02f);
    } else {
      std::fill_n(buf.data(), n, is_layer_norm_weight(spec.name) ? 1.0f : 0.0f);
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
        throw InternalError("dummy weights must be f32, f16 or bf16");
    }
  }
}

}  // namespace h2oflex
