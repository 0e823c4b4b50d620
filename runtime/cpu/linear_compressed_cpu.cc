// linear() with a compressed weight (u8 rows of runtime/core/quant4.h): the weight is
// dequantized piece by piece where the GEMM uses it, so a matrix is never widened whole into
// memory (4 bytes a value written and read back) and the scratch stays a few MB.
//
// Decode-sized inputs (few rows) are bound by the weight bytes: each thread dequantizes a piece
// small enough to stay in its core's cache and multiplies it at once (a single-threaded GEMM per
// piece, the threads splitting the pieces). Prefill-sized inputs are bound by the GEMM: the
// pieces are large and each is one multi-threaded GEMM. Either way every output element is one
// GEMM's dot product over the whole reduction, whichever piece its row fell in.
#include <dnnl.h>

#include <algorithm>
#include <vector>

#include "runtime/core/quant4.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/linear_compressed.h"
#include "runtime/cpu/quant4_rows.h"

namespace h2oflex::cpu {

namespace {

constexpr int64_t kFewRows = 64;                        // inputs up to this many rows: decode-like
constexpr int64_t kCachePieceBytes = int64_t{1} << 20;  // per thread, f32 values
constexpr int64_t kGemmPieceBytes = int64_t{16} << 20;

float* piece_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// out[:, n0 .. n0 + nc) = x · piece[nc, k]ᵀ, row stride ldo.
void gemm_piece(const float* x, int64_t m, int64_t k, const float* piece, int64_t nc, float* out,
                int64_t ldo) {
  const dnnl_status_t st = dnnl_sgemm('N', 'T', m, nc, k, 1.0f, x, k, piece, k, 0.0f, out, ldo);
  if (st != dnnl_success) throw InternalError("linear: dnnl_sgemm failed on a compressed piece");
}

}  // namespace

void linear_compressed(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out,
                       ComputeType ct, bool relu) {
  const int64_t m = x.dim(0), k = x.dim(1), n = w.dim(0);
  const int64_t rb = quant4::row_bytes(k);
  const uint8_t* packed = w.data<const uint8_t>();
  if (ct != ComputeType::F32) {
    // 16-bit compute: the dequantized matrix in the operand type (per-thread scratch, reused
    // across calls), then the plain path.
    thread_local std::vector<uint16_t> buf;
    if (buf.size() < static_cast<size_t>(n * k)) buf.resize(static_cast<size_t>(n * k));
    Tensor wide = Tensor::wrap(buf.data(), {n, k}, ops::operand_dtype(ct));
    dequantize4(w, wide);
    linear(x, wide, bias, out, ct, relu);
    return;
  }
  const float* xs = x.data<const float>();
  float* o = out.data<float>();
  if (m <= kFewRows) {
    const int64_t rows = std::max<int64_t>(1, kCachePieceBytes / (4 * k));
    const int64_t pieces = (n + rows - 1) / rows;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t n0 = p * rows, nc = std::min(rows, n - n0);
      float* piece = piece_scratch(static_cast<size_t>(nc * k));
      dequantize4_rows_f32(packed + n0 * rb, nc, k, piece);
      gemm_piece(xs, m, k, piece, nc, o + n0, n);
    }
  } else {
    const int64_t rows = std::max<int64_t>(1, kGemmPieceBytes / (4 * k));
    const int64_t chunk = (rows + 1) / 2;  // the threads dequantize a piece's halves
    for (int64_t n0 = 0; n0 < n; n0 += rows) {
      const int64_t nc = std::min(rows, n - n0);
      float* piece = piece_scratch(static_cast<size_t>(nc * k));
#pragma omp parallel for schedule(static)
      for (int64_t r0 = 0; r0 < nc; r0 += chunk) {
        dequantize4_rows_f32(packed + (n0 + r0) * rb, std::min(chunk, nc - r0), k, piece + r0 * k);
      }
      gemm_piece(xs, m, k, piece, nc, o + n0, n);
    }
  }
  if (bias || relu) {
    const float* b = bias ? bias->data<const float>() : nullptr;
#pragma omp parallel for schedule(static) if (m * n > 65536)
    for (int64_t i = 0; i < m; ++i) {
      float* row = o + i * n;
      for (int64_t j = 0; j < n; ++j) {
        const float v = b ? row[j] + b[j] : row[j];
        row[j] = relu ? std::max(v, 0.0f) : v;
      }
    }
  }
}

}  // namespace h2oflex::cpu
