// SnapKV's prefill statistic on the CPU: the attention of the prompt's last `window` queries,
// summed over the query heads of each KV head, then max-pooled along the keys before the window.
// The sums run in a fixed order (query head, then query row) so the choice is reproducible.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/cpu_ops.h"

namespace h2oflex::cpu {

void window_attention_scores(const Tensor& q, const Tensor& k, const std::vector<int32_t>& pad,
                             float scale, int window, int pool, Tensor& scores) {
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3);
  const int64_t kvh = k.dim(2), group = h / kvh;
#pragma omp parallel
  {
    std::vector<float> raw(static_cast<size_t>(s)), logit(static_cast<size_t>(s));
#pragma omp for schedule(dynamic)
    for (int64_t bg = 0; bg < b * kvh; ++bg) {
      const int64_t bi = bg / kvh, g = bg % kvh, p0 = pad[bi];
      const int64_t w = std::min<int64_t>(window, s - p0), first = s - w;
      std::fill(raw.begin(), raw.end(), 0.0f);
      const float* kb = k.data<float>() + (bi * s * kvh + g) * d;
      for (int64_t hi = g * group; hi < (g + 1) * group; ++hi) {
        for (int64_t i = first; i < s; ++i) {
          const float* qi = q.data<float>() + ((bi * s + i) * h + hi) * d;
          float mx = -INFINITY;
          for (int64_t j = p0; j <= i; ++j) {
            const float* kj = kb + j * kvh * d;
            float dot = 0.0f;
            for (int64_t e = 0; e < d; ++e) dot += qi[e] * kj[e];
            logit[j] = dot * scale;
            mx = std::max(mx, logit[j]);
          }
          float sum = 0.0f;
          for (int64_t j = p0; j <= i; ++j) sum += logit[j] = std::exp(logit[j] - mx);
          for (int64_t j = p0; j <= i; ++j) raw[j] += logit[j] / sum;
        }
      }
      float* out = scores.data<float>() + bg * s;
      const int64_t half = pool / 2;
      for (int64_t j = 0; j < s; ++j) {
        if (j < p0) {
          out[j] = 0.0f;
        } else if (j >= first) {
          out[j] = raw[j];
        } else {
          float m = -INFINITY;
          for (int64_t t = std::max(p0, j - half); t <= std::min(first - 1, j + half); ++t) {
            m = std::max(m, raw[t]);
          }
          out[j] = m;
        }
      }
    }
  }
}

}  // namespace h2oflex::cpu
