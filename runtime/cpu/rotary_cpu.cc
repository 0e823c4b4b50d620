// Rotary position embedding (half-split convention, optionally on a leading part of each head).
#include <cmath>
#include <vector>

#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/parallel_threshold.h"

namespace h2oflex::cpu {

void rotary_embedding(Tensor& x, const Tensor& positions, int64_t heads, int64_t rot_dim,
                      const Tensor& inv_freq) {
  const int64_t rows = positions.numel();
  if (rows == 0) return;
  const int64_t head_dim = x.numel() / (rows * heads), half = rot_dim / 2;
  const float* freq = inv_freq.data<float>();
#pragma omp parallel if (rows * heads * rot_dim > kParallelMinElements)
  {
    std::vector<float> cos_a(static_cast<size_t>(half)), sin_a(static_cast<size_t>(half));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t pos = positions.data<int32_t>()[r];
      if (pos < 0) continue;  // padding row
      // The angle is an f32 product, as in the reference model's f32 positions · inv_freq.
      for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(pos) * freq[i];
        cos_a[i] = std::cos(angle);
        sin_a[i] = std::sin(angle);
      }
      for (int64_t hi = 0; hi < heads; ++hi) {
        float* first = x.data<float>() + (r * heads + hi) * head_dim;
        float* second = first + half;
        for (int64_t i = 0; i < half; ++i) {
          const float a = first[i], b = second[i];
          first[i] = a * cos_a[i] - b * sin_a[i];
          second[i] = b * cos_a[i] + a * sin_a[i];
        }
      }
    }
  }
}

}  // namespace h2oflex::cpu
