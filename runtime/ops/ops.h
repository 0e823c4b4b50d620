// Device-neutral ops. Each op checks its arguments here and dispatches on the tensors' device to
// the CPU backend (runtime/cpu) or the CUDA backend (runtime/cuda). Activations are f32;
// weights may be stored f32, f16 or bf16; `ComputeType` chooses the GEMM arithmetic.
//
// Layout conventions:
//   hidden states   [rows, features] with rows = batch * seq
//   q (prefill)     [batch, seq, heads, head_dim]
//   k/v (prefill)   [batch, seq, kv_heads, head_dim]
//   q (decode)      [batch, heads, head_dim]; the new k/v [batch, kv_heads, head_dim]
//   KV slots        [batch, kv_heads, capacity, head_dim] (f32, f16 or bf16), positions
//                   [batch, kv_heads, capacity] i32 with -1 for an empty slot.
// Grouped-query attention: heads % kv_heads == 0 and query head j reads KV head
// j / (heads / kv_heads), so consecutive query heads share a KV head (kv_heads == heads is
// ordinary multi-head attention).
#pragma once

#include <cstdint>
#include <vector>

#include <span>

#include "runtime/core/op_types.h"
#include "runtime/core/tensor.h"

namespace h2oflex::ops {

// out[m, n] = x[m, k] · w[n, k]ᵀ (+ bias[n]) (then ReLU if `relu`). x, out f32. w is f32, f16,
// bf16, or packed (Tensor::packed(): u8 [n, its row bytes of k values]), unpacked piece by piece
// where the GEMM uses it.
void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out, ComputeType ct,
            bool relu = false);

// Several linear() products of one input (a layer's q, k and v; LLaMA's gate and up), each
// equal to linear(x, *w, bias, *out, ct, relu). On a CPU a decode step's few rows are rounded
// once and all products share one parallel region; elsewhere they run one after another.
void linear_same_input(const Tensor& x, std::span<const LinearOut> parts, ComputeType ct);

// out = LayerNorm(x) * gamma + beta over the last dimension (out may alias x).
void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& out);

// out = x * rsqrt(mean(x²) + eps) * gamma over the last dimension, accumulated in f32 (LLaMA's
// RMSNorm). x, out f32 [rows, n]; gamma f32 [n]; out may alias x.
void rms_norm(const Tensor& x, const Tensor& gamma, float eps, Tensor& out);

// Rotary position embedding, in place, with the half-split convention on the first `rot_dim`
// dims of every head (rot_dim even, <= head_dim; the other dims stay as they are, which is
// GPT-NeoX's partial rotary). x f32 [rows, heads * head_dim]; positions i32 [rows], where a row
// with position < 0 is padding and stays unchanged; inv_freq f32 [rot_dim / 2]. For i < rot_dim/2,
// with a = x[i], b = x[i + rot_dim/2] and angle = float(position) * inv_freq[i] in f32:
// x[i] = a cos - b sin, x[i + rot_dim/2] = b cos + a sin.
void rotary_embedding(Tensor& x, const Tensor& positions, int64_t heads, int64_t rot_dim,
                      const Tensor& inv_freq);

// out = gate * sigmoid(gate) * up elementwise (SwiGLU). All f32 of equal size; out may alias gate.
void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out);

// x = 0.5 x (1 + erf(x / sqrt(2))) elementwise (the exact GELU), in place. f32.
void gelu(Tensor& x);

// Splits GPT-NeoX's fused query_key_value output, laid out per head as [q(d), k(d), v(d)]:
// qkv f32 [rows, heads * 3 * d] -> q, k, v f32 [rows, heads * d].
void split_qkv_heads(const Tensor& qkv, int64_t heads, Tensor& q, Tensor& k, Tensor& v);

// x += bias (broadcast over rows), then ReLU if `relu`. In place.
void add_bias_relu(Tensor& x, const Tensor& bias, bool relu);

// x += y elementwise (residual connections). In place.
void add_inplace(Tensor& x, const Tensor& y);

// out[r, :] = table[ids[r], :] (ids i32 [rows]; table f32/f16/bf16 [vocab, dim]).
void embed_tokens(const Tensor& ids, const Tensor& table, Tensor& out);

// x[r, :] += table[positions[r] + offset, :] (OPT's learned positions use offset 2).
void add_positions(Tensor& x, const Tensor& positions, const Tensor& table, int offset);

// Causal self-attention over a left-padded prompt, grouped-query when kvh < h.
//   q: [b, s, h, d] f32; k, v: [b, s, kvh, d] f32 with h % kvh == 0; pad[i] = number of
//   left-padding positions of sequence i.
//   out: [b, s, h, d]. Padding query rows produce zeros.
//   colsum (optional, [b, kvh, s] f32): per KV head, Σ over the query heads sharing it and over
//   real query rows i of softmax P[i, j] (H2O score), added in a fixed order.
//   ct: with BF16 the two products may take bf16-rounded inputs (q, k, v, and the probabilities
//   for P V), sums in f32, where that is faster (the CPU with a bf16 matmul); the softmax and
//   colsum stay f32. F32 and F16 keep f32 products, and so does CUDA at every ct (its prefill
//   attention is a small share of a GPU prefill).
void attention_prefill(const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::vector<int32_t>& pad, float scale, Tensor& out, Tensor* colsum,
                       ComputeType ct);

// SnapKV's prefill statistic: what the last `window` real queries attend to, pooled.
//   q: [b, s, h, d] f32; k: [b, s, kvh, d] f32, left-padded as for attention_prefill.
//   scores [b, kvh, s] f32: per KV head, raw[j] = Σ over its query heads and over the window's
//   queries i (the last min(window, real) real rows) of causal softmax P[i, j]; then each key
//   before the window gets the maximum of raw over its neighbours j - pool/2 .. j + pool/2 before
//   the window (1-D max pooling, `pool` odd), keys in the window keep raw, padding 0.
void window_attention_scores(const Tensor& q, const Tensor& k, const std::vector<int32_t>& pad,
                             float scale, int window, int pool, Tensor& scores);

// Single-token attention over cached slots plus the new token, grouped-query when kvh < h.
//   q: [b, h, d] f32; k_new, v_new: [b, kvh, d] f32 with h % kvh == 0. k_cache, v_cache:
//   [b, kvh, cap, d]; slot_pos [b, kvh, cap] i32 (a slot takes part iff its position >= 0).
//   out: [b, h, d].
//   slot_probs (optional, [b, kvh, cap] f32): per KV head, Σ over the query heads sharing it of
//   each slot's softmax probability (0 for empty slots);
//   new_prob (optional, [b, kvh] f32): the same sum for the new token itself.
void attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& slot_pos, const Tensor& k_new, const Tensor& v_new, float scale,
                      Tensor& out, Tensor* slot_probs, Tensor* new_prob);

// ids[r] = argmax over logits[r, :] (ties: the lowest id).
void argmax(const Tensor& logits, std::vector<int32_t>& ids);

// Samples one id per row with temperature and nucleus (top-p) filtering, from a counter-based
// stream (seed, stream=row key, step) so results do not depend on batching.
void sample(const Tensor& logits, const SampleParams& params, const std::vector<uint64_t>& row_keys,
            uint64_t step, std::vector<int32_t>& ids);

// H2O prefill selection. colsum [b, h, s] f32; pad[i] left-padding of sequence i (positions
// 0..pad-1 are padding). For each (sequence, head): if the n = s - pad real tokens fit in
// heavy + recent keep them all; otherwise keep the `recent` most recent real positions plus the
// `heavy` positions with the largest score among the others (ties: the earlier position).
// keep [b, h, heavy + recent] i32: kept positions in ascending order, -1 padded.
void select_heavy_recent(const Tensor& colsum, const std::vector<int32_t>& pad, int heavy,
                         int recent, Tensor& keep);

// H2O decode eviction. For each (sequence i, head): among slots with
// 0 <= slot_pos < protect_from[i] pick the lowest score (ties: the smallest position) and
// write its slot index to victim [b, h] i32, or -1 if no slot qualifies.
void evict_lowest_score(const Tensor& scores, const Tensor& slot_pos,
                        const std::vector<int32_t>& protect_from, Tensor& victim);

// Scores shared by a layer's heads (TOVA's one kept set per layer). scores [b, h, n] f32, in
// place: every head of (sequence i, slot j) gets the mean over heads of scores[i, :, j], summed
// in head order and divided by h (the same bits on every device).
void average_over_heads(Tensor& scores);

// ---- 4-bit group-wise compression (row layout and arithmetic: runtime/core/quant4.h) ----

// Compresses each row (the last dimension, n values) of src (f32) into dst (u8, rows x
// quant4::row_bytes(n) bytes, any shape of that many elements).
void quantize4(const Tensor& src, Tensor& dst);

// The inverse: dst (f32, bf16 or f16, rows of n values along its last dimension) from the rows
// of src (u8, rows x quant4::row_bytes(n) bytes).
void dequantize4(const Tensor& src, Tensor& dst);

// ---- Packed formats (runtime/core/storage_format.h), on the tensors' device ----

// Packs each row (the last dimension, n values) of src (f32) into dst (u8 [rows, row bytes],
// dst.packed() names the format; InputError when the format cannot be packed here).
void pack(const Tensor& src, Tensor& dst);
// The inverse: dst (f32, rows of n values) from the packed rows of src.
void unpack(const Tensor& src, Tensor& dst);

// ---- Memory: where tensors live and moving them between devices ----

// An uninitialized tensor on `device` (for cuda:i, memory from device i's CUDA allocator).
Tensor empty(Shape shape, DType dtype, Device device);

// `t` itself when it is already on `device`, else a fresh copy there.
Tensor on_device(const Tensor& t, Device device);

// dst = src byte for byte (equal sizes; either may be on the host or the device). When dst is on
// the host it is ready to read on return; a device dst is ordered on the current stream.
void copy(const Tensor& src, Tensor& dst);

// Every element of an f32 or i32 tensor = value.
void fill(Tensor& t, float value);

// Returns once the work queued on `device` (that one GPU) from this thread has finished (no-op
// for the CPU).
void synchronize(Device device);

// ---- KV slots (layout in the header comment) ----

// Stores a prompt's kept keys and values. k, v [b, s, h, d] f32; keep [b, h, n] i32: for each
// (sequence, head) the positions to keep, ascending, -1 for unused entries. The i-th kept
// position goes to slot i when `compact` (an evicting cache), else to slot = position (a full
// cache, where decode appends at slot = position). Each stored slot gets slot_pos = its position
// and slot_score = keep_score[b, h, position] ([b, h, s] f32), or 0 without keep_score. Slots
// not written keep their contents (callers clear them first).
void kv_scatter_prefill(const Tensor& k, const Tensor& v, const Tensor& keep,
                        const Tensor* keep_score, bool compact, Tensor& k_slots, Tensor& v_slots,
                        Tensor& slot_pos, Tensor& slot_score);

// Stores one new token per (sequence, head): k_new, v_new [b, h, d] f32 at padded `position`.
// The slot is `position` for a full cache (victim == nullptr); for an evicting cache it is the
// first empty slot (slot_pos < 0), else victim[b, h] ([b, h] i32 from evict_lowest_score). The
// slot gets slot_pos = position and slot_score = new_score[b, h] ([b, h] f32), or fixed_score
// without new_score. changed [b, h] i32 receives the slot written, or -1 where no slot was
// valid (the caller treats that as a bug).
void kv_insert(const Tensor& k_new, const Tensor& v_new, const Tensor* victim, int32_t position,
               const Tensor* new_score, float fixed_score, Tensor& k_slots, Tensor& v_slots,
               Tensor& slot_pos, Tensor& slot_score, Tensor& changed);

}  // namespace h2oflex::ops
