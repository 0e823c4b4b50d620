// The CPU's pack and unpack of every packed format's rows (runtime/core/storage_format.h): the
// kernels behind a format's row, on the calling thread, for code that works on packed rows where
// it uses them (a piece of a packed matrix, a KV row).
#pragma once

#include <cstdint>

#include "runtime/core/storage_format.h"
#include "runtime/core/tensor.h"

namespace h2oflex::cpu {

// out[rows, n] = the f32 values of `rows` packed rows of n values.
void unpack_rows_f32(PackedFormat f, const uint8_t* in, int64_t rows, int64_t n, float* out);

// `rows` rows of n values from x, packed. InternalError for a row that cannot be packed here
// (packable false): callers check the row first.
void pack_rows(PackedFormat f, const float* x, int64_t rows, int64_t n, uint8_t* out);

// Every row of src (f32, last dimension n) packed into dst (u8, dst.packed()'s rows), in parallel.
void pack(const Tensor& src, Tensor& dst);
// The inverse: dst (f32, rows of n values) from the packed rows of src.
void unpack(const Tensor& src, Tensor& dst);

}  // namespace h2oflex::cpu
