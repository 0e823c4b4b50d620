// CUDA backend kernels (cuBLAS and .cu kernels); tensors live in GPU memory.
// Same signatures as runtime/ops/ops.h; arguments were already checked by the dispatcher, which
// also made the tensors' device current: the kernels run on that device's current stream.
#pragma once

#include "runtime/core/byte_ranges.h"
#include "runtime/core/op_types.h"

namespace h2oflex::cuda {

using ops::ComputeType;
using ops::SampleParams;

void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out, ComputeType ct,
            bool relu = false);

namespace detail {
// linear with converted operands taken in pieces of at most `piece_bytes` (linear passes
// gpu_reserve::kGemmOperandChunkBytes; tests pass small ones to cover the piece boundaries).
void linear_in_pieces(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out,
                      ComputeType ct, bool relu, uint64_t piece_bytes);
}  // namespace detail

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

// Every row of src (f32, last dimension n) packed into dst (u8, dst.packed()'s rows), and the
// inverse into dst of f32, f16 or bf16: the twins of runtime/cpu/packed_rows.h's pack / unpack.
void pack(const Tensor& src, Tensor& dst);
void unpack(const Tensor& src, Tensor& dst);

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

// Copies on the current stream of the receiving device (the source's for a copy to the host),
// ordered after the source device's queued work when the two are different GPUs; waits for the
// copy when either end is host memory. Makes the devices current itself.
void copy(const Tensor& src, Tensor& dst);

void fill(Tensor& t, float value);

// The pieces `ranges` of device memory `src` packed one after another into device memory `dst`,
// on the current stream (the piece table is uploaded first; the call does not wait).
void gather_ranges(const void* src, const ByteRanges& ranges, void* dst);

// Waits for the current device's current stream.
void synchronize();

void kv_scatter_prefill(const Tensor& k, const Tensor& v, const Tensor& keep,
                        const Tensor* keep_score, bool compact, Tensor& k_slots, Tensor& v_slots,
                        Tensor& slot_pos, Tensor& slot_score);

void kv_insert(const Tensor& k_new, const Tensor& v_new, const Tensor* victim, int32_t position,
               const Tensor* new_score, float fixed_score, Tensor& k_slots, Tensor& v_slots,
               Tensor& slot_pos, Tensor& slot_score, Tensor& changed);

}  // namespace h2oflex::cuda
