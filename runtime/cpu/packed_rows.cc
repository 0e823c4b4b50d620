#include "runtime/cpu/packed_rows.h"

#include <algorithm>

#include "runtime/core/block_format.h"
#include "runtime/core/error.h"
#include "runtime/cpu/quant4_rows.h"

namespace h2oflex::cpu {

namespace {

// The GGUF block table's row for a packed format that stores GGUF blocks. Rows of whole blocks
// lie back to back, so `rows` rows are rows * n / block_values consecutive blocks.
const BlockFormat& gguf_blocks(PackedFormat f) {
  const BlockFormat* b = block_format_by_name(packed_format_row(f).ggml_name);
  H2OFLEX_CHECK(b != nullptr, "packed format ", packed_format_row(f).name, " has no block row");
  return *b;
}

}  // namespace

void unpack_rows_f32(PackedFormat f, const uint8_t* in, int64_t rows, int64_t n, float* out) {
  if (f == PackedFormat::Q4G64) {
    dequantize4_rows_f32(in, rows, n, out);
    return;
  }
  const BlockFormat& b = gguf_blocks(f);
  H2OFLEX_CHECK(b.unpack != nullptr, "packed format ", b.name, " cannot be unpacked");
  b.unpack(in, out, static_cast<size_t>(rows * n) / b.block_values);
}

void pack_rows(PackedFormat f, const float* x, int64_t rows, int64_t n, uint8_t* out) {
  if (f == PackedFormat::Q4G64) {
    const int64_t rb = static_cast<int64_t>(packed_format_row(f).row_bytes(n));
    for (int64_t r = 0; r < rows; ++r) quantize4_row(x + r * n, n, out + r * rb);
    return;
  }
  const BlockFormat& b = gguf_blocks(f);
  H2OFLEX_CHECK(b.pack != nullptr, "packed format ", b.name, " cannot be packed");
  b.pack(x, out, static_cast<size_t>(rows * n) / b.block_values);
}

}  // namespace h2oflex::cpu

namespace h2oflex::cpu {

void pack(const Tensor& src, Tensor& dst) {
  const int64_t n = src.dim(src.rank() - 1), rows = n == 0 ? 0 : src.numel() / n;
  const auto rb = static_cast<int64_t>(packed_format_row(dst.packed()).row_bytes(n));
  constexpr int64_t kRowsPerTask = 16;
#pragma omp parallel for schedule(static) if (rows * n > (int64_t{1} << 16))
  for (int64_t r = 0; r < rows; r += kRowsPerTask) {
    pack_rows(dst.packed(), src.data<const float>() + r * n, std::min(kRowsPerTask, rows - r), n,
              dst.data<uint8_t>() + r * rb);
  }
}

void unpack(const Tensor& src, Tensor& dst) {
  const int64_t n = dst.dim(dst.rank() - 1), rows = n == 0 ? 0 : dst.numel() / n;
  const auto rb = static_cast<int64_t>(packed_format_row(src.packed()).row_bytes(n));
  constexpr int64_t kRowsPerTask = 16;
#pragma omp parallel for schedule(static) if (rows * n > (int64_t{1} << 16))
  for (int64_t r = 0; r < rows; r += kRowsPerTask) {
    unpack_rows_f32(src.packed(), src.data<const uint8_t>() + r * rb,
                    std::min(kRowsPerTask, rows - r), n, dst.data<float>() + r * n);
  }
}

}  // namespace h2oflex::cpu
