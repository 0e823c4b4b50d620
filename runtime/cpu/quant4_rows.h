// The CPU's row dequantizer (runtime/cpu/quant4_cpu.cc) for kernels that dequantize a piece of a
// compressed matrix where they use it.
#pragma once

#include <cstdint>

namespace h2oflex::cpu {

// out[rows, n] = the f32 values of `rows` compressed rows of n values (quant4.h), on the calling
// thread.
void dequantize4_rows_f32(const uint8_t* in, int64_t rows, int64_t n, float* out);

}  // namespace h2oflex::cpu
