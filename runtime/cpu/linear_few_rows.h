// Decode-sized linear() over bf16 weights on the CPU (runtime/cpu/linear_few_rows_cpu.cc).
#pragma once

#include <cstdint>
#include <span>

namespace h2oflex::cpu {

// Inputs of at most this many rows (a decode step's batch) may take linear_few_rows_bf16.
constexpr int64_t kFewRowsBf16 = 16;

// Whether this CPU runs linear_few_rows_bf16 (it needs the AVX512-BF16 dot product).
bool few_rows_bf16_available();

// out[m, :n] (row stride ldo) = x16 · wᵀ (+ bias[:n]) (then ReLU), x16 the input already rounded
// to bf16 [m, k] and w bf16 [n, k], exact products summed in f32 (the arithmetic of the library's
// bf16 GEMM) in an order fixed per output element: a row's result does not depend on m or on
// which thread computed it. Reads each weight once. m <= kFewRowsBf16.
void linear_few_rows_bf16(const uint16_t* x16, int64_t m, int64_t k, const uint16_t* w, int64_t n,
                          const float* bias, float* out, int64_t ldo, bool relu);

// One of several products of the same input: out[m, :n] (row stride ldo) = x16 · wᵀ (+ bias)
// (then ReLU).
struct FewRowsProduct {
  const uint16_t* w;
  int64_t n;
  const float* bias;
  float* out;
  int64_t ldo;
  bool relu;
};

// Each product as linear_few_rows_bf16 computes it (the same bits), the input laid out once and
// all products' rows shared among the threads in one parallel region: a decode step's q, k and v
// wake the threads once, not three times (each wake-up took 35-50 µs on a 2-core VM).
void linear_few_rows_bf16(const uint16_t* x16, int64_t m, int64_t k,
                          std::span<const FewRowsProduct> products);

}  // namespace h2oflex::cpu
