// Row-wise and elementwise kernels: LayerNorm, RMSNorm, bias + ReLU, residual add, SwiGLU, GELU,
// the fused-QKV split, embeddings.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/core/half.h"
#include "runtime/core/storage_format.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/packed_rows.h"
#include "runtime/cpu/parallel_threshold.h"

namespace h2oflex::cpu {

namespace {
// Reads element i of a 1-D or 2-D table row as f32 whatever its storage type.
inline void load_row(const Tensor& table, int64_t row, int64_t dim, float* dst) {
  const size_t off = static_cast<size_t>(row * dim);
  switch (table.dtype()) {
    case DType::F32:
      std::memcpy(dst, table.data<float>() + off, static_cast<size_t>(dim) * 4);
      break;
    case DType::BF16:
      convert_bf16_to_f32(table.data<uint16_t>() + off, dst, static_cast<size_t>(dim));
      break;
    case DType::F16:
      convert_f16_to_f32(table.data<uint16_t>() + off, dst, static_cast<size_t>(dim));
      break;
    default:
      throw InternalError("embedding table must be f32, f16 or bf16");
  }
}

// Σ f(in[i]) in double over eight interleaved partial sums, added in a fixed order: one running
// double sum waits out each add's latency (a prefill's LayerNorms took 0.4 s of OPT-1.3B's
// 27 s that way), and a fixed order keeps the bits the same on every CPU.
template <typename F>
double sum8(const float* in, int64_t n, F f) {
  double part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) part[j] += f(in[i + j]);
  }
  for (; i < n; ++i) part[i % 8] += f(in[i]);
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

}  // namespace

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& out) {
  const int64_t rows = x.numel() / x.dim(-1), n = x.dim(-1);
  const float* g = gamma.data<float>();
  const float* b = beta.data<float>();
#pragma omp parallel for schedule(static) if (rows * n > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data<float>() + r * n;
    float* o = out.data<float>() + r * n;
    const float mean = static_cast<float>(sum8(in, n, [](float v) { return double(v); }) / n);
    const double var = sum8(in, n, [mean](float v) { return double(v - mean) * (v - mean); });
    const float inv = 1.0f / std::sqrt(static_cast<float>(var / n) + eps);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = (in[i] - mean) * inv * g[i] + b[i];
  }
}

void rms_norm(const Tensor& x, const Tensor& gamma, float eps, Tensor& out) {
  const int64_t n = x.dim(-1), rows = n == 0 ? 0 : x.numel() / n;
  const float* g = gamma.data<float>();
#pragma omp parallel for schedule(static) if (rows * n > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data<float>() + r * n;
    float* o = out.data<float>() + r * n;
    float sq = 0;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < n; ++i) sq += in[i] * in[i];
    // 1/sqrt rather than an approximate reciprocal square root: both backends round the same.
    const float inv = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
    // Every element is read before it is written, so out may alias x.
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = in[i] * inv * g[i];
  }
}

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const int64_t n = gate.numel();
  const float* g = gate.data<float>();
  const float* u = up.data<float>();
  float* o = out.data<float>();
#pragma omp parallel for schedule(static) if (n > kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void gelu(Tensor& x) {
  const int64_t n = x.numel();
  float* a = x.data<float>();
  const float inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
#pragma omp parallel for schedule(static) if (n > kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) a[i] = a[i] * 0.5f * (1.0f + std::erf(a[i] * inv_sqrt2));
}

void split_qkv_heads(const Tensor& qkv, int64_t heads, Tensor& q, Tensor& k, Tensor& v) {
  const int64_t rows = qkv.dim(0), width = qkv.dim(1), d = width / (3 * heads);
  float* dst[3] = {q.data<float>(), k.data<float>(), v.data<float>()};
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t hi = 0; hi < heads; ++hi) {
      const float* src = qkv.data<float>() + r * width + hi * 3 * d;
      for (int part = 0; part < 3; ++part) {
        std::copy_n(src + part * d, d, dst[part] + (r * heads + hi) * d);
      }
    }
  }
}

void add_bias_relu(Tensor& x, const Tensor& bias, bool relu) {
  const int64_t n = x.dim(-1), rows = x.numel() / n;
  const float* b = bias.data<float>();
#pragma omp parallel for schedule(static) if (rows * n > kParallelMinElements)
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data<float>() + r * n;
    if (relu) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) row[i] = std::max(row[i] + b[i], 0.0f);
    } else {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) row[i] += b[i];
    }
  }
}

void add_inplace(Tensor& x, const Tensor& y) {
  const int64_t n = x.numel();
  float* a = x.data<float>();
  const float* b = y.data<float>();
#pragma omp parallel for simd schedule(static) if (n > kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void embed_tokens(const Tensor& ids, const Tensor& table, Tensor& out) {
  const int64_t rows = ids.numel(), dim = rows == 0 ? 0 : out.numel() / rows;
  const PackedFormat f = table.packed();
  if (f != PackedFormat::None) {
    // A table kept in its blocks (a GGUF file's, weight_format: stored): only the gathered rows
    // are unpacked, straight into the output.
    const auto rb = static_cast<int64_t>(packed_format_row(f).row_bytes(dim));
    for (int64_t r = 0; r < rows; ++r) {
      unpack_rows_f32(f, table.data<const uint8_t>() + ids.data<int32_t>()[r] * rb, 1, dim,
                      out.data<float>() + r * dim);
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    load_row(table, ids.data<int32_t>()[r], dim, out.data<float>() + r * dim);
  }
}

void add_positions(Tensor& x, const Tensor& positions, const Tensor& table, int offset) {
  const int64_t rows = positions.numel(), dim = table.dim(1);
  std::vector<float> row(static_cast<size_t>(dim));
  for (int64_t r = 0; r < rows; ++r) {
    load_row(table, positions.data<int32_t>()[r] + offset, dim, row.data());
    float* o = x.data<float>() + r * dim;
#pragma omp simd
    for (int64_t i = 0; i < dim; ++i) o[i] += row[i];
  }
}

}  // namespace h2oflex::cpu
