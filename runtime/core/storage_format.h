// How a tensor's elements are stored, and so how many bytes it takes: the storage-format table.
//
// A plain format stores each element in its dtype. A packed format stores rows of values in
// blocks (groups) along the innermost dimension, each block with its scale (and minimum) beside
// its codes; one row per format below says its name, how many values a block holds and how many
// bytes a row of n values takes. Every byte-size computation (a weight layout's tensor bytes, a
// KV record, the memory plan's sizes) goes through StorageFormat::bytes, and every dispatch on a
// packed tensor reads its Tensor::packed() format, so a new format is one row here plus its
// kernels (runtime/cpu/packed_rows, the fused linear), not a change to their callers.
//
// Rows:
//   q4_g64  FlexGen's group-wise 4-bit (compress_weight / compress_cache): a row's codes, then
//           one fp16 (minimum, step) pair per 64 values (runtime/core/quant4.h); any row length.
//   q8_0, q4_0, q4_1, q4_k, q6_k  GGUF's block layouts bit for bit (runtime/core/block_format.h),
//           so a GGUF tensor is stored and moved as read; rows are whole blocks (32 or 256).
// A packed format's dtype is the type its values are unpacked to for a GEMM.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/dtype.h"

namespace h2oflex {

enum class PackedFormat : uint8_t { None, Q4G64, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K };

struct PackedFormatRow {
  PackedFormat id;
  std::string_view name;       // the policy's spelling: "q4_g64", "q8_0", ...
  std::string_view ggml_name;  // the GGUF type this row stores bit for bit; empty for q4_g64
  int64_t block_values;        // values per block (group)
  bool packable;  // values can be packed into it here (the K formats are only read from files)
  bool kv_cache;  // decode attention reads KV rows in it
  // Bytes of one row of n values; InputError-free: call row_fits first for GGUF rows.
  uint64_t (*row_bytes)(int64_t n);
};

// Every packed row, in enum order (None excluded).
std::span<const PackedFormatRow> packed_format_rows();
// linear on packed weights with up to this many input rows (a decode step's batch) reads the
// blocks in place, in f32, on the CPU and on CUDA alike: bound by the weight bytes. More rows
// unpack pieces of the matrix for a GEMM.
inline constexpr int64_t kPackedFewRows = 16;

const PackedFormatRow& packed_format_row(PackedFormat f);
// The row spelled `name` (case-insensitive), nullptr when none.
const PackedFormatRow* packed_format_by_name(std::string_view name);
// The plain format spelled `name` ("f32", "f16", "bf16"; exact), nullopt when none.
std::optional<DType> plain_format_by_name(std::string_view name);
inline constexpr std::string_view kPlainFormatNames = "f32, f16, bf16";
// The row that stores GGUF type `ggml_name` ("Q4_1") as read; nullptr when none does.
const PackedFormatRow* packed_format_by_ggml_name(std::string_view ggml_name);
// True when rows of n values can be stored in `f` (GGUF rows are whole blocks).
bool row_fits(PackedFormat f, int64_t n);
// "q4_g64, q8_0, ..." (only rows for which `keep` holds), for messages.
std::string packed_format_list(bool (*keep)(const PackedFormatRow&) = nullptr);

struct StorageFormat {
  DType dtype = DType::F32;  // plain: the element type; packed: the type values unpack to
  PackedFormat packed = PackedFormat::None;

  static StorageFormat plain(DType t) { return StorageFormat{t, PackedFormat::None}; }
  bool is_packed() const { return packed != PackedFormat::None; }

  // Bytes of `numel` elements whose innermost dimension has `row` elements (packed blocks never
  // straddle rows; plain formats ignore `row`).
  uint64_t bytes(uint64_t numel, uint64_t row) const;
  uint64_t bytes(uint64_t numel) const { return bytes(numel, numel); }
  // Bytes of one row of n values.
  uint64_t row_bytes(int64_t n) const { return bytes(static_cast<uint64_t>(n), n); }
  // "f32", "bf16", "q4_g64 (bf16)".
  std::string name() const;

  bool operator==(const StorageFormat&) const = default;
};

// FlexGen's compression (compress_weight / compress_cache): q4_g64, 4.5 bits per value.
inline StorageFormat compressed_format(DType dequantized) {
  return StorageFormat{dequantized, PackedFormat::Q4G64};
}

// The KV cache's format: rows of head_dim elements, plain or packed (cache_format; q4_g64 under
// compress_cache).
inline StorageFormat kv_storage_format(DType kv_dtype, PackedFormat packed) {
  return StorageFormat{kv_dtype, packed};
}

// The policy's `weight_format`: how the decoder layers' matrices are stored (the rule per tensor
// is models/weight_spec.h, stored_format).
//   stored  the default: as the checkpoint holds them (a GGUF tensor's own blocks, moved and
//           computed on as read), else in the compute's dtype (or q4_g64 under compress_weight);
//   plain   a checkpoint's packed tensors unpacked to the compute's dtype (q4_g64 under
//           compress_weight);
//   f32, f16, bf16  plain in that dtype: the matrices are stored in the compute's operand type,
//           so the run computes in it (compute_dtype must be auto or that type; checked where
//           both are read, policy::check_compute_dtype);
//   a packed row's name (q4_g64, q8_0, q4_0, q4_1): packed to it at load.
struct WeightFormat {
  enum class Mode : uint8_t { Stored, Plain, Dtype, Packed };
  Mode mode = Mode::Stored;
  PackedFormat packed = PackedFormat::None;  // Mode::Packed only
  DType dtype = DType::F32;                  // Mode::Dtype only

  static WeightFormat packed_as(PackedFormat f) { return {Mode::Packed, f}; }
  static WeightFormat plain_as(DType t) { return {Mode::Dtype, PackedFormat::None, t}; }
  // Unpacked: the matrices are plain floats (plain or a dtype).
  bool is_plain() const { return mode == Mode::Plain || mode == Mode::Dtype; }
  std::string name() const;
  bool operator==(const WeightFormat&) const = default;
};

// Bytes of a tensor of `shape` (rows along its last dimension) in format `f`.
uint64_t tensor_bytes(const StorageFormat& f, const std::vector<int64_t>& shape);

// The shape a tensor of `shape` is held in: itself when plain, [rows, row bytes] (u8) when packed.
std::vector<int64_t> stored_shape(const StorageFormat& f, const std::vector<int64_t>& shape);

}  // namespace h2oflex
