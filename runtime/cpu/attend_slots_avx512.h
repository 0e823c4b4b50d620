// Decode attention of one query head over a plain f32 or bf16 cache with AVX-512
// (runtime/cpu/attend_slots_avx512.cc): the scores of 16 slots at a time.
#pragma once

#include <cstdint>

namespace h2oflex::cpu {

// Whether attend_slots_avx512 runs on this CPU for rows of d values (d = 64 or 128).
bool attend_slots_avx512_takes(int64_t d);

// One query row q (d values) against a KV head's cap cached rows k and v (f32, or bf16 where
// bf16 is true; slot j empty where pos[j] < 0, its contents never read into a result) and the new
// token (score `self`, already scaled; value row v_new): the softmax over the filled slots and
// the new token, acc = the probability-weighted sum of their value rows. p[j] receives slot j's
// probability (0 where empty); returns the new token's. Scores and sums are f32, each in an order
// fixed per slot, whatever cap is.
float attend_slots_avx512(const float* q, const void* k, const void* v, bool bf16,
                          const int32_t* pos, float self, float scale, const float* v_new,
                          int64_t cap, int64_t d, float* p, float* acc);

}  // namespace h2oflex::cpu
