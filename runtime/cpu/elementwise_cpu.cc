// Row-wise and elementwise kernels: LayerNorm, bias + ReLU, residual add, embeddings.
#include <cmath>
#include <cstring>

#include "runtime/core/half.h"
#include "runtime/cpu/cpu_ops.h"

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
}  // namespace

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& out) {
  const int64_t rows = x.numel() / x.dim(-1), n = x.dim(-1);
  const float* g = gamma.data<float>();
  const float* b = beta.data<float>();
#pragma omp parallel for schedule(static) if (rows > 4)
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data<float>() + r * n;
    float* o = out.data<float>() + r * n;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += in[i];
    const float mean = static_cast<float>(sum / n);
    double var = 0;
    for (int64_t i = 0; i < n; ++i) var += double(in[i] - mean) * (in[i] - mean);
    const float inv = 1.0f / std::sqrt(static_cast<float>(var / n) + eps);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = (in[i] - mean) * inv * g[i] + b[i];
  }
}

void add_bias_relu(Tensor& x, const Tensor& bias, bool relu) {
  const int64_t n = x.dim(-1), rows = x.numel() / n;
  const float* b = bias.data<float>();
#pragma omp parallel for schedule(static) if (rows * n > 65536)
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
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void embed_tokens(const Tensor& ids, const Tensor& table, Tensor& out) {
  const int64_t rows = ids.numel(), dim = table.dim(1);
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
