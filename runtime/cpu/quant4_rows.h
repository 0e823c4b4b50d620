// The CPU's row (de)quantizers (runtime/cpu/quant4_cpu.cc) for kernels that work on compressed
// rows where they use them: a piece of a compressed matrix, a compressed KV row.
#pragma once

#include <cstdint>

namespace h2oflex::cpu {

// out[rows, n] = the f32 values of `rows` compressed rows of n values (quant4.h), on the calling
// thread.
void dequantize4_rows_f32(const uint8_t* in, int64_t rows, int64_t n, float* out);

// One compressed row of n values from x, on the calling thread.
void quantize4_row(const float* x, int64_t n, uint8_t* out);

}  // namespace h2oflex::cpu
