// Softmax pieces of the attention kernels, vectorised: the exponentials of a prefill are
// (prompt² / 2) x heads x layers values — 805 M for OPT-1.3B at 8 x 512 — and with the library's
// scalar expf they took more of attention_prefill than its two GEMMs did.
//
// exp_approx is e^x by range reduction (x = n ln2 + r, |r| <= ln2 / 2), a degree-7 polynomial
// for e^r (Cephes' expf coefficients) and a scale by 2^n built from the exponent bits: within
// 2 ulp of the exact value for x in [-87.3, 88.7], exactly 1 at 0, 0 below -87.33 (and for
// -inf), infinity above 88.72, NaN for NaN. The file is compiled without contracting multiply-adds,
// so every CPU level gets the same bits.
#pragma once

#include <cstdint>

namespace h2oflex::cpu {

float exp_approx(float x);

// p[j] = e^(p[j] - shift) for j < n; returns their sum, added in index order: zeros (a decode's
// empty slots, given -inf) and where the values sit in the array leave it unchanged, so caches
// holding the same tokens in the same order give the same bits whatever their capacity.
float exp_shifted_sum(float* p, int64_t n, float shift);

// Causal softmax of one query's score row in place: the first `valid` of `n` scores become
// probabilities, the rest 0. Adds the probabilities to col[0, valid) when col is not null (the
// column sums H2O keeps).
void softmax_causal_row(float* p, int64_t valid, int64_t n, double* col);

// The bf16 prefill's softmax of one query's raw scores s (scale not yet applied): the first
// `valid` of `n` become P[j] = e^(scale s[j] - max) / Σ in f32 (s keeps the exponentials),
// col[j] += P[j], and p16 receives P rounded to bf16, zeros from valid to n. The row is taken in
// whole blocks of 16: s and p16 hold n >= valid rounded up to 16 values, col as many (the
// padding's 0 is added there too). One pass each for the maximum, the exponentials and the
// rest: the separate scaling, normalising, column-sum and rounding passes cost as much as the
// products they sit between.
void softmax_scaled_row_bf16(float* s, int64_t valid, int64_t n, float scale, double* col,
                             uint16_t* p16);

}  // namespace h2oflex::cpu
