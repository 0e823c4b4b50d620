// How a tensor's elements are stored, and so how many bytes it takes. Every byte-size computation
// (tensor bytes in a weight layout, KV record bytes, the memory plan's sizes) goes through
// StorageFormat::bytes, so a packed format changes one place, not its callers.
//
// Plain formats store each element in its dtype. A packed format stores `bits` per element, two
// or more to a byte, in groups of `group_size` elements along the innermost dimension, each group
// with an fp16 minimum and scale beside it (FlexGen's group-wise asymmetric quantization); its
// dtype is the type the values are dequantized to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/quant4.h"

namespace h2oflex {

struct StorageFormat {
  DType dtype = DType::F32;
  int bits = 0;        // 0: plain (the dtype's width); else 2, 4 or 8 packed bits per element
  int group_size = 0;  // packed only: elements per quantization group

  static StorageFormat plain(DType t) { return StorageFormat{t, 0, 0}; }
  bool packed() const { return bits != 0; }

  // Bytes of `numel` elements whose innermost dimension has `row` elements (packed groups never
  // straddle rows; plain formats ignore `row`).
  uint64_t bytes(uint64_t numel, uint64_t row) const;
  uint64_t bytes(uint64_t numel) const { return bytes(numel, numel); }
  // "f32", "bf16", "int4/g64 (bf16)".
  std::string name() const;

  bool operator==(const StorageFormat&) const = default;
};

// FlexGen's compression (compress_weight / compress_cache): 4 bits per element in groups of 64
// along the row, each group's fp16 minimum and step beside the row's data — 4.5 bits per value.
// The row layout and the arithmetic are in runtime/core/quant4.h.
inline constexpr int kCompressBits = 4;
inline constexpr int kCompressGroup = static_cast<int>(quant4::kGroup);
inline StorageFormat compressed_format(DType dequantized) {
  return StorageFormat{dequantized, kCompressBits, kCompressGroup};
}

// The KV cache's format: rows of head_dim elements, compressed under compress_cache.
inline StorageFormat kv_storage_format(DType kv_dtype, bool compress_cache) {
  return compress_cache ? compressed_format(kv_dtype) : StorageFormat::plain(kv_dtype);
}

// Bytes of a tensor of `shape` (rows along its last dimension) in format `f`.
uint64_t tensor_bytes(const StorageFormat& f, const std::vector<int64_t>& shape);

// Throws InputError unless `f` is plain, or packed with bits in {2, 4, 8} and group_size >= 1.
void validate_storage_format(const StorageFormat& f);

}  // namespace h2oflex
