// H2OFLEX_VECTOR_CLONES: compile a hot loop once per x86-64 level (v4: AVX-512, v3: AVX2 + FMA,
// and the baseline the build targets) and let the loader pick the widest the CPU runs (GCC's
// target_clones, an ifunc). The build itself stays portable (no -march=native).
// Not under ThreadSanitizer: the loader runs ifunc resolvers before TSan's runtime is ready,
// and the process crashes at start.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define H2OFLEX_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define H2OFLEX_VECTOR_CLONES
#endif
