// Small bf16 products with f32 sums on the calling thread: the attention blocks' GEMMs.
#pragma once

#include <cstdint>

namespace h2oflex::cpu {

// c[i * ldc + j] = Σ_t a[i * lda + t] · b[t * b_row + j * b_col] for i < m, j < n, t < k, with
// a and b bf16 and the sums f32. Runs on the calling thread, also inside a parallel region. Needs
// the library's bf16 matmul (gemm_has_kernel(ComputeType::BF16)); one kernel is built and kept
// per shape and layout, so callers should repeat a few shapes.
void gemm_bf16_f32(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda,
                   const uint16_t* b, int64_t b_row, int64_t b_col, float* c, int64_t ldc);

}  // namespace h2oflex::cpu
