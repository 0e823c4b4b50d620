// Block storage formats as data: one row per format with its name, its GGUF / ggml type id, how
// many values a block holds and how many bytes it takes, and its unpack (to f32) and, where the
// reference quantizer is simple, pack (from f32). The rows follow ggml's type traits and its
// block layouts bit for bit, so a GGUF tensor's bytes are read as they are stored.
//
// Every ggml type has a row, so a GGUF file's sizes can be checked whatever it holds; a row
// without `unpack` is a type the engine does not read yet (refused by name where it is met).
// This table is where the storage formats carried by tensors will grow from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace h2oflex {

struct BlockFormat {
  std::string_view name;  // ggml's spelling: "F32", "Q4_K", ...
  uint32_t ggml_type;     // the type id GGUF files store
  uint32_t block_values;  // values per block (1 for plain floats and integers)
  uint32_t block_bytes;   // bytes per block
  // `blocks` blocks at `src` to blocks * block_values f32 values. Null: not read.
  void (*unpack)(const uint8_t* src, float* dst, size_t blocks) = nullptr;
  // The inverse as ggml's reference quantizer computes it. Null: not written.
  void (*pack)(const float* src, uint8_t* dst, size_t blocks) = nullptr;
};

// Every row, in type-id order.
std::span<const BlockFormat> block_formats();
// The row for a GGUF type id; nullptr for an id ggml does not define.
const BlockFormat* block_format_by_ggml_type(uint32_t type);
// The row named `name` (ggml's spelling, case-insensitive); nullptr when none.
const BlockFormat* block_format_by_name(std::string_view name);
// The names of the rows that can be unpacked, comma-separated, for messages.
std::string readable_block_format_list();

}  // namespace h2oflex
