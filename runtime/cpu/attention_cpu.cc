// Attention kernels: causal prefill over a left-padded prompt (with H2O column sums) and
// single-token decode over KV slots. Scores and softmax are fp32; probabilities are exact
// softmax values so H2O accumulates the same numbers whichever backend runs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/cpu/cpu_ops.h"

namespace h2oflex::cpu {

namespace {

inline float dot(const float* a, const float* b, int64_t d) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < d; ++i) s += a[i] * b[i];
  return s;
}

inline void axpy(float alpha, const float* x, float* y, int64_t d) {
#pragma omp simd
  for (int64_t i = 0; i < d; ++i) y[i] += alpha * x[i];
}

// Copies one cached vector to f32.
inline void load_vec(const Tensor& t, size_t offset, int64_t d, float* dst) {
  switch (t.dtype()) {
    case DType::F32:
      std::copy_n(t.data<float>() + offset, d, dst);
      break;
    case DType::BF16:
      convert_bf16_to_f32(t.data<uint16_t>() + offset, dst, static_cast<size_t>(d));
      break;
    case DType::F16:
      convert_f16_to_f32(t.data<uint16_t>() + offset, dst, static_cast<size_t>(d));
      break;
    default:
      throw InternalError("KV cache must be f32, f16 or bf16");
  }
}

}  // namespace

void attention_prefill(const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::vector<int32_t>& pad, float scale, Tensor& out, Tensor* colsum) {
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3);
  const int64_t row_stride = h * d;  // between consecutive positions of one head
#pragma omp parallel
  {
    std::vector<float> kh(static_cast<size_t>(s * d)), vh(static_cast<size_t>(s * d));
    std::vector<float> p(static_cast<size_t>(s)), acc(static_cast<size_t>(d));
    std::vector<double> col(static_cast<size_t>(s));
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < b * h; ++bh) {
      const int64_t bi = bh / h, hi = bh % h;
      const int64_t p0 = pad[bi];
      const float* qb = q.data<float>() + bi * s * row_stride + hi * d;
      const float* kb = k.data<float>() + bi * s * row_stride + hi * d;
      const float* vb = v.data<float>() + bi * s * row_stride + hi * d;
      float* ob = out.data<float>() + bi * s * row_stride + hi * d;
      for (int64_t j = 0; j < s; ++j) {  // gather this head's keys and values contiguously
        std::copy_n(kb + j * row_stride, d, kh.data() + j * d);
        std::copy_n(vb + j * row_stride, d, vh.data() + j * d);
      }
      std::fill(col.begin(), col.end(), 0.0);
      for (int64_t i = 0; i < p0; ++i) std::fill_n(ob + i * row_stride, d, 0.0f);
      for (int64_t i = p0; i < s; ++i) {
        const float* qi = qb + i * row_stride;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = p0; j <= i; ++j) {
          p[j] = dot(qi, kh.data() + j * d, d) * scale;
          mx = std::max(mx, p[j]);
        }
        float sum = 0;
        for (int64_t j = p0; j <= i; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        const float inv = 1.0f / sum;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j = p0; j <= i; ++j) {
          p[j] *= inv;
          col[j] += p[j];
          axpy(p[j], vh.data() + j * d, acc.data(), d);
        }
        std::copy_n(acc.data(), d, ob + i * row_stride);
      }
      if (colsum != nullptr) {
        float* cs = colsum->data<float>() + bh * s;
        for (int64_t j = 0; j < s; ++j) cs[j] = static_cast<float>(col[j]);
      }
    }
  }
}

void attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& slot_pos, const Tensor& k_new, const Tensor& v_new, float scale,
                      Tensor& out, Tensor* slot_probs, Tensor* new_prob) {
  const int64_t b = q.dim(0), h = q.dim(1), d = q.dim(2), cap = k_cache.dim(2);
#pragma omp parallel
  {
    std::vector<float> p(static_cast<size_t>(cap)), vec(static_cast<size_t>(d)),
        acc(static_cast<size_t>(d));
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < b * h; ++bh) {
      const float* qi = q.data<float>() + bh * d;
      const int32_t* pos = slot_pos.data<int32_t>() + bh * cap;
      const size_t base = static_cast<size_t>(bh * cap * d);
      float self = dot(qi, k_new.data<float>() + bh * d, d) * scale;
      float mx = self;
      for (int64_t j = 0; j < cap; ++j) {
        if (pos[j] < 0) continue;
        load_vec(k_cache, base + static_cast<size_t>(j * d), d, vec.data());
        p[j] = dot(qi, vec.data(), d) * scale;
        mx = std::max(mx, p[j]);
      }
      float sum = self = std::exp(self - mx);
      for (int64_t j = 0; j < cap; ++j) {
        if (pos[j] < 0) continue;
        p[j] = std::exp(p[j] - mx);
        sum += p[j];
      }
      const float inv = 1.0f / sum;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < cap; ++j) {
        if (pos[j] < 0) {
          p[j] = 0.0f;
          continue;
        }
        p[j] *= inv;
        load_vec(v_cache, base + static_cast<size_t>(j * d), d, vec.data());
        axpy(p[j], vec.data(), acc.data(), d);
      }
      self *= inv;
      axpy(self, v_new.data<float>() + bh * d, acc.data(), d);
      std::copy_n(acc.data(), d, out.data<float>() + bh * d);
      if (slot_probs != nullptr) std::copy_n(p.data(), cap, slot_probs->data<float>() + bh * cap);
      if (new_prob != nullptr) new_prob->data<float>()[bh] = self;
    }
  }
}

}  // namespace h2oflex::cpu
