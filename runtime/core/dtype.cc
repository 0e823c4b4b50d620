#include "runtime/core/dtype.h"

#include "runtime/core/error.h"

namespace h2oflex {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::I32:
      return "i32";
    case DType::U8:
      return "u8";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32" || name == "fp32") return DType::F32;
  if (name == "f16" || name == "float16" || name == "fp16") return DType::F16;
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (name == "i32" || name == "int32") return DType::I32;
  if (name == "u8" || name == "uint8") return DType::U8;
  throw InputError(
      detail::concat("unknown dtype '", name, "' (expected f32, f16, bf16, i32 or u8)"));
}

}  // namespace h2oflex
