// CPU backend kernels (OpenMP, oneDNN).
// Same signatures as runtime/ops/ops.h; arguments were already checked by the dispatcher.
#pragma once

#include <span>

#include "runtime/core/byte_ranges.h"
#include "runtime/core/op_types.h"

namespace h2oflex::cpu {

using ops::ComputeType;
using ops::SampleParams;

// Whether the GEMM library has a kernel of its own for `ct` (f32 always). Without one, linear()
// rounds the inputs to the 16-bit type and runs an f32 GEMM: more work than f32 itself.
bool gemm_has_kernel(ComputeType ct);

void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out, ComputeType ct,
            bool relu = false);

void linear_same_input(const Tensor& x, std::span<const ops::LinearOut> parts, ComputeType ct);

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& out);

void rms_norm(const Tensor& x, const Tensor& gamma, float eps, Tensor& out);

void rotary_embedding(Tensor& x, const Tensor& positions, int64_t heads, int64_t rot_dim,
                      const Tensor& inv_freq);

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out);

void gelu(Tensor& x);

void split_qkv_heads(const Tensor& qkv, int64_t heads, Tensor& q, Tensor& k, Tensor& v);

void add_bias_relu(Tensor& x, const Tensor& bias, bool relu);

void add_inplace(Tensor& x, const Tensor& y);

void embed_tokens(const Tensor& ids, const Tensor& table, Tensor& out);

void add_positions(Tensor& x, const Tensor& positions, const Tensor& table, int offset);

void attention_prefill(const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::vector<int32_t>& pad, float scale, Tensor& out, Tensor* colsum,
                       ComputeType ct);

void attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& slot_pos, const Tensor& k_new, const Tensor& v_new, float scale,
                      Tensor& out, Tensor* slot_probs, Tensor* new_prob);

void quantize4(const Tensor& src, Tensor& dst);

void dequantize4(const Tensor& src, Tensor& dst);

void argmax(const Tensor& logits, std::vector<int32_t>& ids);

void sample(const Tensor& logits, const SampleParams& params, const std::vector<uint64_t>& row_keys,
            uint64_t step, std::vector<int32_t>& ids);

void select_heavy_recent(const Tensor& colsum, const std::vector<int32_t>& pad, int heavy,
                         int recent, Tensor& keep);

void evict_lowest_score(const Tensor& scores, const Tensor& slot_pos,
                        const std::vector<int32_t>& protect_from, Tensor& victim);

void average_over_heads(Tensor& scores);

void window_attention_scores(const Tensor& q, const Tensor& k, const std::vector<int32_t>& pad,
                             float scale, int window, int pool, Tensor& scores);

void copy(const Tensor& src, Tensor& dst);

// The pieces `ranges` of `src` packed one after another into `dst` (the CUDA twin gathers device
// memory before one copy to the host).
void gather_ranges(const void* src, const ByteRanges& ranges, void* dst);

void fill(Tensor& t, float value);

void kv_scatter_prefill(const Tensor& k, const Tensor& v, const Tensor& keep,
                        const Tensor* keep_score, bool compact, Tensor& k_slots, Tensor& v_slots,
                        Tensor& slot_pos, Tensor& slot_score);

void kv_insert(const Tensor& k_new, const Tensor& v_new, const Tensor* victim, int32_t position,
               const Tensor* new_score, float fixed_score, Tensor& k_slots, Tensor& v_slots,
               Tensor& slot_pos, Tensor& slot_score, Tensor& changed);

}  // namespace h2oflex::cpu
