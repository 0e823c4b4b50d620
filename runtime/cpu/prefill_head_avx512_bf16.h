// One (sequence, head) of a causal prefill with bf16 products on a CPU with AVX512-BF16
// (runtime/cpu/prefill_head_avx512_bf16.cc): the scores and the weighted sum come from the pair
// dot product (vdpbf16ps) over operands packed once per head, in tiles that stay in the
// registers, with the softmax and its column sums in f32 between them.
#pragma once

#include <cstdint>

namespace h2oflex::cpu {

// Whether prefill_head_avx512_bf16 runs on this CPU for heads of d values (d = 64 or 128).
bool prefill_head_avx512_bf16_takes(int64_t d);

// q, k, v, out point at the head's first real position (f32 rows of d values, row strides
// q_stride, kv_stride and q_stride); len real positions. out[i] = Σ_{j <= i} P[i, j] v[j] with
// P the causal softmax of scale · q[i] · k[j], where q, k, v and P are rounded to bf16 before
// their products and the sums are f32; col[j] += Σ_i P[i, j] (the unrounded f32 probabilities).
void prefill_head_avx512_bf16(const float* q, const float* k, const float* v, float* out,
                              int64_t len, int64_t d, int64_t q_stride, int64_t kv_stride,
                              float scale, double* col);

}  // namespace h2oflex::cpu
