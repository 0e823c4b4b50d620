// The compute type of a run: parsed from its spellings, or chosen for this CPU by measured GEMM
// rates ("auto"), not by CPU flags: a CPU may have bf16 instructions and still multiply f32
// faster (AVX512-BF16 without AMX), and a library may lack a 16-bit kernel the CPU has.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/op_types.h"

namespace h2oflex::ops {

// "auto" gives nullopt; f32 / fp32 / float32, f16 / fp16 / float16, bf16 / bfloat16 give their
// type. Anything else is an InputError naming `key` and the accepted values.
std::optional<ComputeType> parse_compute_dtype(std::string_view name, std::string_view key);

std::string_view compute_type_name(ComputeType ct);

// Seconds of one linear() in each type on a prefill-like and a decode-like shape.
struct ComputeRate {
  ComputeType type;
  double prefill_s;
  double decode_s;
};

// Measures f32 and each 16-bit type the GEMM library has a kernel for, once per process (a few
// hundredths of a second), and picks the one with the least prefill_s + decode_s. f32 is kept
// unless a 16-bit type is at least kNarrowMargin faster: a near tie would otherwise flip between
// runs, and f32 is the exact arithmetic.
ComputeType fastest_cpu_compute_type();
const std::vector<ComputeRate>& measured_cpu_compute_rates();  // f32 first
inline constexpr double kNarrowMargin = 1.2;

}  // namespace h2oflex::ops
