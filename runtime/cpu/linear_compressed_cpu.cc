// linear() with a packed weight (u8 rows of a packed format, runtime/core/storage_format.h): the
// weight is unpacked piece by piece where the GEMM uses it, so a matrix is never widened whole
// into memory (4 bytes a value written and read back) and the scratch stays a few MB.
//
// Decode-sized inputs (up to kFusedRows rows, f32 compute) are bound by the weight bytes: q4_g64
// rows are multiplied straight from the codes, never writing a dequantized value
// (fused_few_rows), and so are q8_0 / q4_0 / q4_1 blocks (fused_block_few_rows); a K-format row
// is unpacked into one row of scratch that stays in the core's L1 and is used at once by every
// input row (fused_unpacked_rows).
// Up to kFewRows rows each thread dequantizes a piece small enough to stay in its core's cache
// and multiplies it at once (a single-threaded GEMM per piece, the threads splitting the
// pieces). Prefill-sized inputs are bound by the GEMM: the pieces are large and each is one
// multi-threaded GEMM. Either way every output element is one dot product over the whole
// reduction, whichever piece its row fell in.
#include <dnnl.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/core/cpu_memory_reserve.h"
#include "runtime/core/half.h"
#include "runtime/core/quant4.h"
#include "runtime/core/storage_format.h"
#include "runtime/core/vector_clones.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/linear_compressed.h"
#include "runtime/cpu/packed_rows.h"
#include "runtime/cpu/parallel_threshold.h"
#include "runtime/cpu/quant4_rows.h"

namespace h2oflex::cpu {

namespace {

constexpr int64_t kFusedRows = kPackedFewRows;          // inputs up to this many rows: fused
constexpr int64_t kFewRows = 64;                        // inputs up to this many rows: decode-like
constexpr int64_t kCachePieceBytes = int64_t{1} << 20;  // per thread, f32 values
constexpr auto kPieceBytes = static_cast<int64_t>(cpu_reserve::kCompressedPieceBytes);

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

constexpr int64_t kHalf = quant4::kGroup / 2;  // codes of one nibble in a full group
constexpr int64_t kLanes = 16;

// x split per group into its even and odd values (the low and the high nibbles' values), so the
// codes are used as they lie in their bytes, and each group's sum, for the lo term.
struct SplitInput {
  std::vector<float> even, odd;  // [m, groups, 32]
  std::vector<float> sums;       // [m, groups]
};

void split_input(const float* x, int64_t m, int64_t k, SplitInput& s) {
  const int64_t ng = quant4::groups(k);
  s.even.assign(static_cast<size_t>(m * ng * kHalf), 0.0f);
  s.odd.assign(s.even.size(), 0.0f);
  s.sums.assign(static_cast<size_t>(m * ng), 0.0f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t t = 0; t < k; ++t) {
      const int64_t g = t / quant4::kGroup, j = (t % quant4::kGroup) / 2;
      const size_t at = static_cast<size_t>((i * ng + g) * kHalf + j);
      (t % 2 == 0 ? s.even : s.odd)[at] = x[i * k + t];
      s.sums[static_cast<size_t>(i * ng + g)] += x[i * k + t];
    }
  }
}

// out[i, j] = Σ_g lo_g Σ_t x[i, t] + step_g Σ_t x[i, t] code_t over the groups of weight row j:
// the dequantized value lo + code·step multiplied out, so only the 4.5 bits a value are read.
// A short last group is zero-padded in the split input and its missing codes are 0. Compiled for
// the widest vectors the CPU has (the lanes are independent accumulators, so every clone gives
// the same sums up to the fused multiply-adds it may use).
H2OFLEX_VECTOR_CLONES void fused_rows(const SplitInput& s, int64_t m, int64_t k,
                                      const uint8_t* packed, int64_t j0, int64_t j1, float* out,
                                      int64_t ldo) {
  const int64_t ng = quant4::groups(k), rb = quant4::row_bytes(k), cb = quant4::code_bytes(k);
  float acc[kFusedRows][kLanes];
  float lo_acc[kFusedRows];
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* row = packed + j * rb;
    for (int64_t i = 0; i < m; ++i) {
      lo_acc[i] = 0.0f;
      for (int64_t l = 0; l < kLanes; ++l) acc[i][l] = 0.0f;
    }
    for (int64_t g = 0; g < ng; ++g) {
      uint16_t pair[2];
      std::memcpy(pair, row + cb + 4 * g, 4);
      const float lo = f16_to_f32(pair[0]), step = f16_to_f32(pair[1]);
      const int64_t bytes = std::min(kHalf, cb - g * kHalf);
      float lo_codes[kHalf] = {}, hi_codes[kHalf] = {};
      const uint8_t* codes = row + g * kHalf;
      if (bytes == kHalf) {
        for (int64_t t = 0; t < kHalf; ++t) {
          lo_codes[t] = static_cast<float>(codes[t] & 15);
          hi_codes[t] = static_cast<float>(codes[t] >> 4);
        }
      } else {
        for (int64_t t = 0; t < bytes; ++t) {
          lo_codes[t] = static_cast<float>(codes[t] & 15);
          hi_codes[t] = static_cast<float>(codes[t] >> 4);
        }
      }
      for (int64_t i = 0; i < m; ++i) {
        const float* xe = s.even.data() + (i * ng + g) * kHalf;
        const float* xo = s.odd.data() + (i * ng + g) * kHalf;
        for (int64_t l = 0; l < kLanes; ++l) {
          const float dot = xe[l] * lo_codes[l] + xe[l + kLanes] * lo_codes[l + kLanes] +
                            xo[l] * hi_codes[l] + xo[l + kLanes] * hi_codes[l + kLanes];
          acc[i][l] += step * dot;
        }
        lo_acc[i] += lo * s.sums[static_cast<size_t>(i * ng + g)];
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      float sum = lo_acc[i];
      for (int64_t l = 0; l < kLanes; ++l) sum += acc[i][l];
      out[i * ldo + j] = sum;
    }
  }
}

void fused_few_rows(const float* x, int64_t m, int64_t k, const uint8_t* packed, int64_t n,
                    float* out) {
  thread_local SplitInput caller_split;  // the caller's: the threads below read it, named by s
  SplitInput& s = caller_split;
  split_input(x, m, k, s);
  constexpr int64_t kRowsPerTask = 32;
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t j0 = t * kRowsPerTask;
    fused_rows(s, m, k, packed, j0, std::min(n, j0 + kRowsPerTask), out, n);
  }
}

// out[i, j] for weight rows [j0, j1): each row unpacked once into `row` (k values), then its dot
// with every input row. The lanes are independent accumulators, added in lane order.
H2OFLEX_VECTOR_CLONES void dot_rows(const float* x, int64_t m, int64_t k, const float* row,
                                    int64_t j, float* out, int64_t ldo) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * k;
    float acc[kLanes] = {};
    int64_t t = 0;
    for (; t + kLanes <= k; t += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) acc[l] += xi[t + l] * row[t + l];
    }
    float sum = 0.0f;
    for (; t < k; ++t) sum += xi[t] * row[t];
    for (int64_t l = 0; l < kLanes; ++l) sum += acc[l];
    out[i * ldo + j] = sum;
  }
}

void fused_unpacked_rows(PackedFormat f, const float* x, int64_t m, int64_t k,
                         const uint8_t* packed, int64_t n, float* out) {
  const auto rb = static_cast<int64_t>(packed_format_row(f).row_bytes(k));
  constexpr int64_t kRowsPerTask = 32;
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    float* row = piece_scratch(static_cast<size_t>(k));
    for (int64_t j = task * kRowsPerTask; j < std::min(n, (task + 1) * kRowsPerTask); ++j) {
      unpack_rows_f32(f, packed + j * rb, 1, k, row);
      dot_rows(x, m, k, row, j, out, n);
    }
  }
}

// The 32-value GGUF blocks (q8_0, q4_0, q4_1) multiplied straight from their codes: per block,
// its codes as floats, then d · Σ code·x (+ m · Σ x for q4_1) for every input row — no unpacked
// value written. Q8_0: int8 codes at byte 2; Q4_0 / Q4_1: value t in the low nibble of byte t,
// value t + 16 in its high nibble (codes of Q4_0 less 8). The lanes are independent
// accumulators, added in lane order.
constexpr int64_t kBlock = 32;

bool has_fused_block_kernel(PackedFormat f) {
  return f == PackedFormat::Q8_0 || f == PackedFormat::Q4_0 || f == PackedFormat::Q4_1;
}

H2OFLEX_VECTOR_CLONES void fused_block_rows(PackedFormat f, const float* x, const float* xsums,
                                            int64_t m, int64_t k, const uint8_t* packed, int64_t j0,
                                            int64_t j1, float* out, int64_t ldo) {
  const int64_t blocks = k / kBlock;
  const int64_t block_bytes = f == PackedFormat::Q8_0 ? 34 : f == PackedFormat::Q4_0 ? 18 : 20;
  const int64_t rb = blocks * block_bytes;
  for (int64_t j = j0; j < j1; ++j) {
    float acc[kFusedRows][kLanes] = {};
    float min_acc[kFusedRows] = {};
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* blk = packed + j * rb + b * block_bytes;
      uint16_t half[2];
      std::memcpy(half, blk, 4);
      const float d = f16_to_f32(half[0]);
      float codes[kBlock];
      if (f == PackedFormat::Q8_0) {
        for (int64_t t = 0; t < kBlock; ++t) codes[t] = static_cast<float>(int8_t(blk[2 + t]));
      } else {
        const uint8_t* nib = blk + (f == PackedFormat::Q4_0 ? 2 : 4);
        const float bias = f == PackedFormat::Q4_0 ? 8.0f : 0.0f;
        for (int64_t t = 0; t < kBlock / 2; ++t) {
          codes[t] = static_cast<float>(nib[t] & 15) - bias;
          codes[t + kBlock / 2] = static_cast<float>(nib[t] >> 4) - bias;
        }
      }
      for (int64_t i = 0; i < m; ++i) {
        const float* xb = x + i * k + b * kBlock;
        for (int64_t l = 0; l < kLanes; ++l) {
          acc[i][l] += d * (codes[l] * xb[l] + codes[l + kLanes] * xb[l + kLanes]);
        }
      }
      if (f == PackedFormat::Q4_1) {
        const float mn = f16_to_f32(half[1]);
        for (int64_t i = 0; i < m; ++i) min_acc[i] += mn * xsums[i * blocks + b];
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      float sum = min_acc[i];
      for (int64_t l = 0; l < kLanes; ++l) sum += acc[i][l];
      out[i * ldo + j] = sum;
    }
  }
}

void fused_block_few_rows(PackedFormat f, const float* x, int64_t m, int64_t k,
                          const uint8_t* packed, int64_t n, float* out) {
  const int64_t blocks = k / kBlock;
  thread_local std::vector<float> caller_sums;  // the caller's: the threads below read it
  std::vector<float>& sums = caller_sums;
  sums.assign(static_cast<size_t>(m * blocks), 0.0f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t t = 0; t < k; ++t)
      sums[static_cast<size_t>(i * blocks + t / kBlock)] += x[i * k + t];
  }
  constexpr int64_t kRowsPerTask = 32;
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
  const float* s = sums.data();
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t j0 = task * kRowsPerTask;
    fused_block_rows(f, x, s, m, k, packed, j0, std::min(n, j0 + kRowsPerTask), out, n);
  }
}

// nc rows of the packed matrix as operand values (bf16 / f16) into dst.
void unpack_piece(PackedFormat f, const Tensor& rows, int64_t k, DType op, void* dst) {
  const int64_t nc = rows.dim(0);
  Tensor piece = Tensor::wrap(dst, {nc, k}, op);
  if (f == PackedFormat::Q4G64) {
    dequantize4(rows, piece);
    return;
  }
  const auto rb = static_cast<int64_t>(packed_format_row(f).row_bytes(k));
  const int64_t chunk = std::max<int64_t>(1, nc / 8);
#pragma omp parallel for schedule(static) if (nc * k > kParallelMinElements)
  for (int64_t r0 = 0; r0 < nc; r0 += chunk) {
    const int64_t count = std::min(chunk, nc - r0);
    float* values = piece_scratch(static_cast<size_t>(count * k));
    unpack_rows_f32(f, rows.data<const uint8_t>() + r0 * rb, count, k, values);
    auto* o = static_cast<uint16_t*>(dst) + r0 * k;
    const auto len = static_cast<size_t>(count * k);
    if (op == DType::BF16) {
      convert_f32_to_bf16(values, o, len);
    } else {
      convert_f32_to_f16(values, o, len);
    }
  }
}

}  // namespace

void linear_compressed(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out,
                       ComputeType ct, bool relu) {
  const int64_t m = x.dim(0), k = x.dim(1), n = w.dim(0);
  const PackedFormat f = w.packed();
  const auto rb = static_cast<int64_t>(packed_format_row(f).row_bytes(k));
  const uint8_t* packed = w.data<const uint8_t>();
  const float* b = bias ? bias->data<const float>() : nullptr;
  // A decode step's few rows on GGUF blocks are multiplied from the codes in f32 whatever the
  // compute type: bound by the weight bytes, a 16-bit operand would only add a conversion.
  const bool fused_gguf = m <= kFusedRows && f != PackedFormat::Q4G64;
  if (ct != ComputeType::F32 && !fused_gguf) {
    // 16-bit compute: pieces of the matrix dequantized to the operand type, each multiplied by
    // the plain path into its columns of the output.
    const DType op = ops::operand_dtype(ct);
    const int64_t rows = std::max<int64_t>(1, kPieceBytes / (2 * k));
    thread_local std::vector<uint16_t> buf;
    if (buf.size() < static_cast<size_t>(std::min(rows, n) * k)) {
      buf.resize(static_cast<size_t>(std::min(rows, n) * k));
    }
    for (int64_t n0 = 0; n0 < n; n0 += rows) {
      const int64_t nc = std::min(rows, n - n0);
      unpack_piece(f, w.slice(n0, n0 + nc), k, op, buf.data());
      linear_into(x, buf.data(), op, nc, b ? b + n0 : nullptr, out.data<float>() + n0, n, ct, relu);
    }
    return;
  }
  const float* xs = x.data<const float>();
  float* o = out.data<float>();
  if (m <= kFusedRows && f == PackedFormat::Q4G64) {
    fused_few_rows(xs, m, k, packed, n, o);
  } else if (m <= kFusedRows && has_fused_block_kernel(f)) {
    fused_block_few_rows(f, xs, m, k, packed, n, o);
  } else if (m <= kFusedRows) {
    fused_unpacked_rows(f, xs, m, k, packed, n, o);
  } else if (m <= kFewRows) {
    const int64_t rows = std::max<int64_t>(1, kCachePieceBytes / (4 * k));
    const int64_t pieces = (n + rows - 1) / rows;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t n0 = p * rows, nc = std::min(rows, n - n0);
      float* piece = piece_scratch(static_cast<size_t>(nc * k));
      unpack_rows_f32(f, packed + n0 * rb, nc, k, piece);
      gemm_piece(xs, m, k, piece, nc, o + n0, n);
    }
  } else {
    const int64_t rows = std::max<int64_t>(1, kPieceBytes / (4 * k));
    const int64_t chunk = (rows + 1) / 2;  // the threads dequantize a piece's halves
    for (int64_t n0 = 0; n0 < n; n0 += rows) {
      const int64_t nc = std::min(rows, n - n0);
      float* piece = piece_scratch(static_cast<size_t>(nc * k));
#pragma omp parallel for schedule(static)
      for (int64_t r0 = 0; r0 < nc; r0 += chunk) {
        unpack_rows_f32(f, packed + (n0 + r0) * rb, std::min(chunk, nc - r0), k, piece + r0 * k);
      }
      gemm_piece(xs, m, k, piece, nc, o + n0, n);
    }
  }
  if (bias || relu) {
#pragma omp parallel for schedule(static) if (m * n > kParallelMinElements)
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
