// The lane sums of 16 vectors as one vector, for the AVX-512 kernels that keep one accumulator
// per output (decode attention's scores, the few-rows GEMM's dot products).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's shuffle and permute intrinsics start from an "undefined" vector written as a
// self-initialised variable, which its own -Wuninitialized then reports at every use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace h2oflex::cpu {

// Lane r of the result = the sum of s[r]'s 16 lanes, added in the tree lane l + (l + 8), then
// + 4, + 2, + 1: the order of a scalar halving loop, so either gives the same bits. Each level
// adds two vectors' halves side by side (47 instructions for the 16 sums, where summing each
// vector alone takes about 16 x 8).
__attribute__((target("avx512f"), always_inline)) inline __m512 lane_sums16(const __m512 (&s)[16]) {
  __m512 t[8], u[4], v[2];
  for (int i = 0; i < 8; ++i) {  // blocks 0-1: s[i] folded to 8 lanes; blocks 2-3: s[i + 8]
    t[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s[i], s[i + 8], 0x44),
                         _mm512_shuffle_f32x4(s[i], s[i + 8], 0xEE));
  }
  for (int i = 0; i < 4; ++i) {  // block 0: row i, 1: i + 8, 2: i + 4, 3: i + 12, 4 lanes each
    u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(t[i], t[i + 4], 0x88),
                         _mm512_shuffle_f32x4(t[i], t[i + 4], 0xDD));
  }
  for (int i = 0; i < 2; ++i) {  // per block: 2 lanes of u[i]'s row, 2 of u[i + 2]'s
    v[i] = _mm512_add_ps(_mm512_shuffle_ps(u[i], u[i + 2], 0x44),
                         _mm512_shuffle_ps(u[i], u[i + 2], 0xEE));
  }
  // Per block the rows of u[0], u[2], u[1], u[3]: lane order 0 2 1 3 8 10 9 11 4 6 5 7 12 14 13 15.
  const __m512 w =
      _mm512_add_ps(_mm512_shuffle_ps(v[0], v[1], 0x88), _mm512_shuffle_ps(v[0], v[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15);
  return _mm512_permutexvar_ps(order, w);  // the order is its own inverse
}

}  // namespace h2oflex::cpu

#pragma GCC diagnostic pop
#endif
