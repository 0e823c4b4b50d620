// Calls a kernel launcher with the GGUF block format of a packed tensor as a compile-time tag, so
// each format's kernels are instantiated with its block decoder (runtime/cuda/gguf_blocks.h).
#pragma once

#include <type_traits>

#include "runtime/core/error.h"
#include "runtime/core/storage_format.h"
#include "runtime/cuda/gguf_blocks.h"

namespace h2oflex::cuda {

template <PackedFormat F>
using FormatTag = std::integral_constant<PackedFormat, F>;

// True for the formats dispatch_gguf_block accepts.
inline bool is_gguf_block(PackedFormat f) {
  return f == PackedFormat::Q8_0 || f == PackedFormat::Q4_0 || f == PackedFormat::Q4_1 ||
         f == PackedFormat::Q4_K || f == PackedFormat::Q6_K;
}

// launch(FormatTag<F>{}) for F = f; InternalError naming `what` and the format otherwise.
template <typename Launch>
void dispatch_gguf_block(PackedFormat f, const char* what, Launch&& launch) {
  switch (f) {
    case PackedFormat::Q8_0:
      launch(FormatTag<PackedFormat::Q8_0>{});
      return;
    case PackedFormat::Q4_0:
      launch(FormatTag<PackedFormat::Q4_0>{});
      return;
    case PackedFormat::Q4_1:
      launch(FormatTag<PackedFormat::Q4_1>{});
      return;
    case PackedFormat::Q4_K:
      launch(FormatTag<PackedFormat::Q4_K>{});
      return;
    case PackedFormat::Q6_K:
      launch(FormatTag<PackedFormat::Q6_K>{});
      return;
    case PackedFormat::None:
    case PackedFormat::Q4G64:
      break;
  }
  throw InternalError(::h2oflex::detail::concat(
      what, ": ", f == PackedFormat::None ? std::string_view("plain") : packed_format_row(f).name,
      " is not a GGUF block format"));
}

}  // namespace h2oflex::cuda
