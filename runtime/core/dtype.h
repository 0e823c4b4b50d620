// Element types of tensors and their sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace h2oflex {

// U8: raw bytes, e.g. rows in a packed storage format (runtime/core/quant4.h).
enum class DType : uint8_t { F32, F16, BF16, I32, U8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::U8:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t);
// Accepts "f32"/"float32", "f16"/"float16", "bf16"/"bfloat16", "i32"/"int32", "u8"/"uint8".
DType parse_dtype(std::string_view name);

}  // namespace h2oflex
