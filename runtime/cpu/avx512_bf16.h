// What the AVX512-BF16 kernels share: the target they are compiled for, and whether this CPU
// runs it (the build itself stays portable; each kernel checks before it is taken).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define H2OFLEX_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

namespace h2oflex::cpu {

inline bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool available =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  return available;
#else
  return false;
#endif
}

}  // namespace h2oflex::cpu
