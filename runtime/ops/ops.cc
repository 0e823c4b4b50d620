// Argument checks and backend dispatch for every op in ops.h.
#include "runtime/ops/ops.h"

#include <utility>

#include "runtime/core/quant4.h"
#include "runtime/cpu/packed_rows.h"

#include "runtime/cpu/cpu_ops.h"
#ifdef H2OFLEX_WITH_CUDA
#include "runtime/cuda/cuda_ops.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/device_memory.h"
#endif

namespace h2oflex::ops {

namespace {

bool on_cuda(const Tensor& t) {
  return t.device().is_cuda();
}

// Calls backend::fn(args...) on the device of `lead`, after checking that every tensor agrees.
// A CUDA op runs with its tensors' device (cuda:i) current, so it uses device i's streams,
// cuBLAS handle and memory pool.
#ifdef H2OFLEX_WITH_CUDA
#define H2OFLEX_DISPATCH(lead, fn, ...)                                     \
  do {                                                                      \
    if (on_cuda(lead)) {                                                    \
      const cuda::DeviceGuard h2oflex_device_guard_((lead).device().index); \
      cuda::fn(__VA_ARGS__);                                                \
    } else {                                                                \
      cpu::fn(__VA_ARGS__);                                                 \
    }                                                                       \
  } while (0)
#else
#define H2OFLEX_DISPATCH(lead, fn, ...)                                         \
  do {                                                                          \
    H2OFLEX_CHECK(!on_cuda(lead), #fn ": CUDA tensor in a build without CUDA"); \
    cpu::fn(__VA_ARGS__);                                                       \
  } while (0)
#endif

void expect(const Tensor& t, DType dtype, int rank, const char* op, const char* what) {
  H2OFLEX_CHECK(t.dtype() == dtype, op, ": ", what, " must be ", dtype_name(dtype), ", got ",
                dtype_name(t.dtype()));
  H2OFLEX_CHECK(rank < 0 || t.rank() == rank, op, ": ", what, " must have rank ", rank,
                ", got shape ", shape_str(t.shape()));
}

void same_device(const Tensor& a, const Tensor& b, const char* op) {
  H2OFLEX_CHECK(a.device() == b.device(), op, ": tensors on different devices");
}

bool is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

// KV slots hold rows of head_dim values in a float type, or packed in a KV format (both
// backends store and attend over every row with kv_cache set).
bool is_kv_storage(const Tensor& t) {
  if (t.packed() == PackedFormat::None) return is_float(t.dtype());
  return packed_format_row(t.packed()).kv_cache;
}

// The last dimension of KV slots holding rows of d values.
int64_t slot_row(const Tensor& slots, int64_t d) {
  return slots.packed() == PackedFormat::None
             ? d
             : static_cast<int64_t>(packed_format_row(slots.packed()).row_bytes(d));
}

void check_linear(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& out) {
  expect(x, DType::F32, 2, "linear", "x");
  expect(out, DType::F32, 2, "linear", "out");
  const bool packed = w.packed() != PackedFormat::None;
  H2OFLEX_CHECK((is_float(w.dtype()) || packed) && w.rank() == 2, "linear: bad weight (",
                dtype_name(w.dtype()), shape_str(w.shape()), ")");
  // A packed weight holds rows of x.dim(1) values in its format's bytes.
  const int64_t w_cols =
      packed ? static_cast<int64_t>(packed_format_row(w.packed()).row_bytes(x.dim(1))) : x.dim(1);
  H2OFLEX_CHECK(!packed || row_fits(w.packed(), x.dim(1)), "linear: rows of ", x.dim(1),
                " values are not whole ", packed_format_row(w.packed()).name, " blocks");
  H2OFLEX_CHECK(w.dim(1) == w_cols && out.dim(0) == x.dim(0) && out.dim(1) == w.dim(0),
                "linear: x ", shape_str(x.shape()), " · w ", shape_str(w.shape()), "ᵀ -> out ",
                shape_str(out.shape()));
  if (bias) {
    expect(*bias, DType::F32, -1, "linear", "bias");
    H2OFLEX_CHECK(bias->numel() == w.dim(0), "linear: bias size");
  }
  same_device(x, w, "linear");
  same_device(x, out, "linear");
  if (bias) same_device(x, *bias, "linear");
}

}  // namespace

void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out, ComputeType ct,
            bool relu) {
  check_linear(x, w, bias, out);
  H2OFLEX_DISPATCH(x, linear, x, w, bias, out, ct, relu);
}

void linear_same_input(const Tensor& x, std::span<const LinearOut> parts, ComputeType ct) {
  for (const LinearOut& p : parts) {
    H2OFLEX_CHECK(p.w != nullptr && p.out != nullptr, "linear_same_input: a part without w or out");
    check_linear(x, *p.w, p.bias, *p.out);
  }
  if (on_cuda(x)) {  // the GPU's launches queue without waking threads: nothing to share
    for (const LinearOut& p : parts) linear(x, *p.w, p.bias, *p.out, ct, p.relu);
    return;
  }
  cpu::linear_same_input(x, parts, ct);
}

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps, Tensor& out) {
  expect(x, DType::F32, -1, "layer_norm", "x");
  H2OFLEX_CHECK(gamma.numel() == x.dim(-1) && beta.numel() == x.dim(-1) && out.numel() == x.numel(),
                "layer_norm: shapes");
  same_device(x, out, "layer_norm");
  same_device(x, gamma, "layer_norm");
  same_device(x, beta, "layer_norm");
  H2OFLEX_DISPATCH(x, layer_norm, x, gamma, beta, eps, out);
}

void rms_norm(const Tensor& x, const Tensor& gamma, float eps, Tensor& out) {
  const char* op = "rms_norm";
  expect(x, DType::F32, -1, op, "x");
  expect(gamma, DType::F32, -1, op, "gamma");
  expect(out, DType::F32, -1, op, "out");
  H2OFLEX_CHECK(x.rank() >= 1, op, ": x must have a feature dimension");
  H2OFLEX_CHECK(gamma.numel() == x.dim(-1), op, ": gamma ", shape_str(gamma.shape()), " for x ",
                shape_str(x.shape()));
  H2OFLEX_CHECK(out.numel() == x.numel(), op, ": out ", shape_str(out.shape()), " for x ",
                shape_str(x.shape()));
  same_device(x, gamma, op);
  same_device(x, out, op);
  H2OFLEX_DISPATCH(x, rms_norm, x, gamma, eps, out);
}

void rotary_embedding(Tensor& x, const Tensor& positions, int64_t heads, int64_t rot_dim,
                      const Tensor& inv_freq) {
  const char* op = "rotary_embedding";
  expect(x, DType::F32, -1, op, "x");
  expect(positions, DType::I32, -1, op, "positions");
  expect(inv_freq, DType::F32, -1, op, "inv_freq");
  const int64_t rows = positions.numel();
  H2OFLEX_CHECK(heads > 0, op, ": heads ", heads);
  H2OFLEX_CHECK(rows > 0 ? x.numel() % (rows * heads) == 0 : x.numel() == 0, op, ": x ",
                shape_str(x.shape()), " is not ", rows, " rows of ", heads, " heads");
  const int64_t head_dim = rows > 0 ? x.numel() / (rows * heads) : 0;
  H2OFLEX_CHECK(rot_dim > 0 && rot_dim % 2 == 0 && (rows == 0 || rot_dim <= head_dim), op,
                ": rot_dim ", rot_dim, " must be even, > 0 and <= head_dim ", head_dim);
  H2OFLEX_CHECK(inv_freq.numel() == rot_dim / 2, op, ": inv_freq has ", inv_freq.numel(),
                " entries, rot_dim ", rot_dim, " needs ", rot_dim / 2);
  same_device(x, positions, op);
  same_device(x, inv_freq, op);
  H2OFLEX_DISPATCH(x, rotary_embedding, x, positions, heads, rot_dim, inv_freq);
}

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const char* op = "silu_mul";
  expect(gate, DType::F32, -1, op, "gate");
  expect(up, DType::F32, -1, op, "up");
  expect(out, DType::F32, -1, op, "out");
  H2OFLEX_CHECK(up.numel() == gate.numel() && out.numel() == gate.numel(), op, ": gate ",
                shape_str(gate.shape()), ", up ", shape_str(up.shape()), ", out ",
                shape_str(out.shape()));
  same_device(gate, up, op);
  same_device(gate, out, op);
  H2OFLEX_DISPATCH(gate, silu_mul, gate, up, out);
}

void gelu(Tensor& x) {
  expect(x, DType::F32, -1, "gelu", "x");
  H2OFLEX_DISPATCH(x, gelu, x);
}

void split_qkv_heads(const Tensor& qkv, int64_t heads, Tensor& q, Tensor& k, Tensor& v) {
  const char* op = "split_qkv_heads";
  expect(qkv, DType::F32, 2, op, "qkv");
  H2OFLEX_CHECK(heads > 0 && qkv.dim(1) % (3 * heads) == 0, op, ": qkv ", shape_str(qkv.shape()),
                " is not ", heads, " heads of [q, k, v]");
  const Shape part{qkv.dim(0), qkv.dim(1) / 3};
  for (const auto& [t, name] :
       {std::pair<const Tensor*, const char*>{&q, "q"}, {&k, "k"}, {&v, "v"}}) {
    expect(*t, DType::F32, -1, op, name);
    H2OFLEX_CHECK(t->numel() == part[0] * part[1], op, ": ", name, " ", shape_str(t->shape()),
                  " must hold ", shape_str(part));
    same_device(qkv, *t, op);
  }
  H2OFLEX_DISPATCH(qkv, split_qkv_heads, qkv, heads, q, k, v);
}

void add_bias_relu(Tensor& x, const Tensor& bias, bool relu) {
  expect(x, DType::F32, -1, "add_bias_relu", "x");
  H2OFLEX_CHECK(bias.numel() == x.dim(-1), "add_bias_relu: bias size");
  same_device(x, bias, "add_bias_relu");
  H2OFLEX_DISPATCH(x, add_bias_relu, x, bias, relu);
}

void add_inplace(Tensor& x, const Tensor& y) {
  expect(x, DType::F32, -1, "add_inplace", "x");
  expect(y, DType::F32, -1, "add_inplace", "y");
  H2OFLEX_CHECK(x.numel() == y.numel(), "add_inplace: sizes ", shape_str(x.shape()), " vs ",
                shape_str(y.shape()));
  same_device(x, y, "add_inplace");
  H2OFLEX_DISPATCH(x, add_inplace, x, y);
}

void embed_tokens(const Tensor& ids, const Tensor& table, Tensor& out) {
  expect(ids, DType::I32, -1, "embed_tokens", "ids");
  H2OFLEX_CHECK(is_float(table.dtype()) && table.rank() == 2, "embed_tokens: table");
  H2OFLEX_CHECK(out.numel() == ids.numel() * table.dim(1), "embed_tokens: out size");
  same_device(ids, out, "embed_tokens");
  same_device(table, out, "embed_tokens");
  if (!on_cuda(ids)) {
    for (int32_t id : ids.span<int32_t>()) {
      H2OFLEX_INPUT_CHECK(id >= 0 && id < table.dim(0), "token id ", id,
                          " outside the vocabulary [0, ", table.dim(0), ")");
    }
  }
  H2OFLEX_DISPATCH(out, embed_tokens, ids, table, out);
}

namespace {

// Rows of n values of a tensor whose last dimension is n, and the bytes they compress to.
uint64_t compressed_rows_bytes(const Tensor& values, const char* op) {
  H2OFLEX_CHECK(values.rank() >= 1, op, ": values need a last dimension");
  const int64_t n = values.dim(values.rank() - 1);
  const int64_t rows = n == 0 ? 0 : values.numel() / n;
  return static_cast<uint64_t>(rows * quant4::row_bytes(n));
}

}  // namespace

void quantize4(const Tensor& src, Tensor& dst) {
  expect(src, DType::F32, -1, "quantize4", "src");
  expect(dst, DType::U8, -1, "quantize4", "dst");
  H2OFLEX_CHECK(static_cast<uint64_t>(dst.numel()) == compressed_rows_bytes(src, "quantize4"),
                "quantize4: dst has ", dst.numel(), " bytes, ", shape_str(src.shape()),
                " compresses to ", compressed_rows_bytes(src, "quantize4"));
  same_device(src, dst, "quantize4");
  H2OFLEX_DISPATCH(src, quantize4, src, dst);
}

void dequantize4(const Tensor& src, Tensor& dst) {
  expect(src, DType::U8, -1, "dequantize4", "src");
  H2OFLEX_CHECK(is_float(dst.dtype()), "dequantize4: dst must be f32, f16 or bf16");
  H2OFLEX_CHECK(static_cast<uint64_t>(src.numel()) == compressed_rows_bytes(dst, "dequantize4"),
                "dequantize4: src has ", src.numel(), " bytes, ", shape_str(dst.shape()), " needs ",
                compressed_rows_bytes(dst, "dequantize4"));
  same_device(src, dst, "dequantize4");
  H2OFLEX_DISPATCH(src, dequantize4, src, dst);
}

namespace {

void check_packed_pair(const Tensor& values, const Tensor& packed, const char* op) {
  expect(values, DType::F32, -1, op, "values");
  H2OFLEX_CHECK(packed.packed() != PackedFormat::None, op, ": the packed side has no format");
  same_device(values, packed, op);
  const int64_t n = values.dim(values.rank() - 1), rows = n == 0 ? 0 : values.numel() / n;
  H2OFLEX_CHECK(row_fits(packed.packed(), n), op, ": rows of ", n, " values are not whole ",
                packed_format_row(packed.packed()).name, " blocks");
  H2OFLEX_CHECK(static_cast<uint64_t>(packed.numel()) ==
                    static_cast<uint64_t>(rows) * packed_format_row(packed.packed()).row_bytes(n),
                op, ": ", packed.numel(), " bytes for ", rows, " rows of ", n, " values in ",
                packed_format_row(packed.packed()).name);
}

}  // namespace

void pack(const Tensor& src, Tensor& dst) {
  check_packed_pair(src, dst, "pack");
  H2OFLEX_INPUT_CHECK(packed_format_row(dst.packed()).packable, "weights cannot be packed to ",
                      packed_format_row(dst.packed()).name,
                      " here (it is read from GGUF files only); packable formats: ",
                      packed_format_list([](const PackedFormatRow& r) { return r.packable; }));
  H2OFLEX_DISPATCH(src, pack, src, dst);
}

void unpack(const Tensor& src, Tensor& dst) {
  check_packed_pair(dst, src, "unpack");
  H2OFLEX_DISPATCH(src, unpack, src, dst);
}

void add_positions(Tensor& x, const Tensor& positions, const Tensor& table, int offset) {
  expect(positions, DType::I32, -1, "add_positions", "positions");
  H2OFLEX_CHECK(x.numel() == positions.numel() * table.dim(1), "add_positions: sizes");
  same_device(positions, x, "add_positions");
  same_device(table, x, "add_positions");
  if (!on_cuda(positions)) {
    for (int32_t p : positions.span<int32_t>()) {
      H2OFLEX_INPUT_CHECK(p + offset >= 0 && p + offset < table.dim(0), "position ", p,
                          " beyond the model's ", table.dim(0) - offset, " positions");
    }
  }
  H2OFLEX_DISPATCH(x, add_positions, x, positions, table, offset);
}

void attention_prefill(const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::vector<int32_t>& pad, float scale, Tensor& out, Tensor* colsum,
                       ComputeType ct) {
  const char* op = "attention_prefill";
  expect(q, DType::F32, 4, op, "q");
  expect(k, DType::F32, 4, op, "k");
  expect(v, DType::F32, 4, op, "v");
  expect(out, DType::F32, 4, op, "out");
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), d = q.dim(3), kvh = k.dim(2);
  H2OFLEX_CHECK(k.dim(0) == b && k.dim(1) == s && k.dim(3) == d, op, ": k ", shape_str(k.shape()),
                " for q ", shape_str(q.shape()), " (batch, seq and head_dim must match)");
  H2OFLEX_CHECK(kvh > 0 && h % kvh == 0, op, ": ", h, " query heads are not a multiple of ", kvh,
                " KV heads");
  H2OFLEX_CHECK(v.shape() == k.shape(), op, ": v ", shape_str(v.shape()), " vs k ",
                shape_str(k.shape()));
  H2OFLEX_CHECK(out.shape() == q.shape(), op, ": out ", shape_str(out.shape()), " vs q ",
                shape_str(q.shape()));
  H2OFLEX_CHECK(static_cast<int64_t>(pad.size()) == b, op, ": pad size");
  for (int32_t p : pad) H2OFLEX_CHECK(p >= 0 && p < s, op, ": pad ", p);
  if (colsum) {
    expect(*colsum, DType::F32, 3, op, "colsum");
    H2OFLEX_CHECK(colsum->shape() == (Shape{b, kvh, s}), op, ": colsum ",
                  shape_str(colsum->shape()), " must be [batch, kv_heads, seq] ",
                  shape_str(Shape{b, kvh, s}));
  }
  for (const Tensor* t :
       {&k, &v, static_cast<const Tensor*>(&out), static_cast<const Tensor*>(colsum)}) {
    if (t) same_device(q, *t, op);
  }
  H2OFLEX_DISPATCH(q, attention_prefill, q, k, v, pad, scale, out, colsum, ct);
}

void window_attention_scores(const Tensor& q, const Tensor& k, const std::vector<int32_t>& pad,
                             float scale, int window, int pool, Tensor& scores) {
  const char* op = "window_attention_scores";
  expect(q, DType::F32, 4, op, "q");
  expect(k, DType::F32, 4, op, "k");
  expect(scores, DType::F32, 3, op, "scores");
  const int64_t b = q.dim(0), s = q.dim(1), h = q.dim(2), kvh = k.dim(2);
  H2OFLEX_CHECK(k.dim(0) == b && k.dim(1) == s && k.dim(3) == q.dim(3), op, ": k ",
                shape_str(k.shape()), " for q ", shape_str(q.shape()));
  H2OFLEX_CHECK(kvh > 0 && h % kvh == 0, op, ": ", h, " query heads over ", kvh, " KV heads");
  H2OFLEX_CHECK(scores.shape() == (Shape{b, kvh, s}), op, ": scores ", shape_str(scores.shape()),
                " must be ", shape_str(Shape{b, kvh, s}));
  H2OFLEX_CHECK(static_cast<int64_t>(pad.size()) == b, op, ": pad size");
  for (int32_t p : pad) H2OFLEX_CHECK(p >= 0 && p < s, op, ": pad ", p);
  H2OFLEX_CHECK(window >= 1 && pool >= 1 && pool % 2 == 1, op, ": window ", window, ", pool ",
                pool);
  same_device(q, k, op);
  same_device(q, scores, op);
  H2OFLEX_DISPATCH(q, window_attention_scores, q, k, pad, scale, window, pool, scores);
}

void attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& slot_pos, const Tensor& k_new, const Tensor& v_new, float scale,
                      Tensor& out, Tensor* slot_probs, Tensor* new_prob) {
  const char* op = "attention_decode";
  expect(q, DType::F32, 3, op, "q");
  const int64_t b = q.dim(0), h = q.dim(1), d = q.dim(2);
  H2OFLEX_CHECK(is_kv_storage(k_cache) && k_cache.rank() == 4, op, ": k_cache ",
                shape_str(k_cache.shape()), " ", dtype_name(k_cache.dtype()));
  const int64_t kvh = k_cache.dim(1), cap = k_cache.dim(2);
  H2OFLEX_CHECK(k_cache.dim(0) == b && k_cache.dim(3) == slot_row(k_cache, d), op, ": k_cache ",
                shape_str(k_cache.shape()), " vs q ", shape_str(q.shape()),
                " (batch and head_dim must match)");
  H2OFLEX_CHECK(kvh > 0 && h % kvh == 0, op, ": ", h, " query heads are not a multiple of ", kvh,
                " KV heads");
  H2OFLEX_CHECK(v_cache.shape() == k_cache.shape() && v_cache.dtype() == k_cache.dtype(), op,
                ": v_cache ", shape_str(v_cache.shape()), " vs k_cache ",
                shape_str(k_cache.shape()));
  expect(slot_pos, DType::I32, 3, op, "slot_pos");
  const Shape meta{b, kvh, cap};
  H2OFLEX_CHECK(slot_pos.shape() == meta, op, ": slot_pos ", shape_str(slot_pos.shape()),
                " must be [batch, kv_heads, capacity] ", shape_str(meta));
  const Shape kv_token{b, kvh, d};
  expect(k_new, DType::F32, 3, op, "k_new");
  expect(v_new, DType::F32, 3, op, "v_new");
  H2OFLEX_CHECK(k_new.shape() == kv_token && v_new.shape() == kv_token, op, ": k_new ",
                shape_str(k_new.shape()), " v_new ", shape_str(v_new.shape()),
                " must be [batch, kv_heads, head_dim] ", shape_str(kv_token));
  expect(out, DType::F32, 3, op, "out");
  H2OFLEX_CHECK(out.shape() == q.shape(), op, ": out ", shape_str(out.shape()), " vs q ",
                shape_str(q.shape()));
  if (slot_probs) {
    expect(*slot_probs, DType::F32, -1, op, "slot_probs");
    H2OFLEX_CHECK(slot_probs->shape() == meta, op, ": slot_probs ", shape_str(slot_probs->shape()),
                  " must be [batch, kv_heads, capacity] ", shape_str(meta));
  }
  if (new_prob) {
    expect(*new_prob, DType::F32, -1, op, "new_prob");
    H2OFLEX_CHECK(new_prob->numel() == b * kvh, op, ": new_prob ", shape_str(new_prob->shape()),
                  " must hold [batch, kv_heads] ", shape_str(Shape{b, kvh}));
  }
  for (const Tensor* t :
       {&k_cache, &v_cache, &slot_pos, &k_new, &v_new, static_cast<const Tensor*>(&out),
        static_cast<const Tensor*>(slot_probs), static_cast<const Tensor*>(new_prob)}) {
    if (t) same_device(q, *t, op);
  }
  H2OFLEX_DISPATCH(q, attention_decode, q, k_cache, v_cache, slot_pos, k_new, v_new, scale, out,
                   slot_probs, new_prob);
}

void argmax(const Tensor& logits, std::vector<int32_t>& ids) {
  expect(logits, DType::F32, 2, "argmax", "logits");
  H2OFLEX_DISPATCH(logits, argmax, logits, ids);
}

void sample(const Tensor& logits, const SampleParams& params, const std::vector<uint64_t>& row_keys,
            uint64_t step, std::vector<int32_t>& ids) {
  expect(logits, DType::F32, 2, "sample", "logits");
  H2OFLEX_CHECK(static_cast<int64_t>(row_keys.size()) == logits.dim(0), "sample: row_keys");
  H2OFLEX_INPUT_CHECK(params.temperature > 0, "temperature must be > 0, got ", params.temperature);
  H2OFLEX_INPUT_CHECK(params.top_p > 0 && params.top_p <= 1, "top_p must be in (0, 1], got ",
                      params.top_p);
  H2OFLEX_DISPATCH(logits, sample, logits, params, row_keys, step, ids);
}

void select_heavy_recent(const Tensor& colsum, const std::vector<int32_t>& pad, int heavy,
                         int recent, Tensor& keep) {
  expect(colsum, DType::F32, 3, "select_heavy_recent", "colsum");
  expect(keep, DType::I32, 3, "select_heavy_recent", "keep");
  H2OFLEX_CHECK(heavy >= 0 && recent >= 1, "select_heavy_recent: heavy ", heavy, " recent ",
                recent);
  H2OFLEX_CHECK(
      keep.dim(0) == colsum.dim(0) && keep.dim(1) == colsum.dim(1) && keep.dim(2) == heavy + recent,
      "select_heavy_recent: keep shape");
  H2OFLEX_CHECK(static_cast<int64_t>(pad.size()) == colsum.dim(0), "select_heavy_recent: pad");
  same_device(colsum, keep, "select_heavy_recent");
  H2OFLEX_DISPATCH(colsum, select_heavy_recent, colsum, pad, heavy, recent, keep);
}

void evict_lowest_score(const Tensor& scores, const Tensor& slot_pos,
                        const std::vector<int32_t>& protect_from, Tensor& victim) {
  expect(scores, DType::F32, 3, "evict_lowest_score", "scores");
  expect(slot_pos, DType::I32, 3, "evict_lowest_score", "slot_pos");
  H2OFLEX_CHECK(scores.shape() == slot_pos.shape(), "evict_lowest_score: shapes");
  H2OFLEX_CHECK(victim.numel() == scores.dim(0) * scores.dim(1), "evict_lowest_score: victim");
  H2OFLEX_CHECK(static_cast<int64_t>(protect_from.size()) == scores.dim(0),
                "evict_lowest_score: protect_from");
  same_device(scores, slot_pos, "evict_lowest_score");
  same_device(scores, victim, "evict_lowest_score");
  H2OFLEX_DISPATCH(scores, evict_lowest_score, scores, slot_pos, protect_from, victim);
}

void average_over_heads(Tensor& scores) {
  expect(scores, DType::F32, 3, "average_over_heads", "scores");
  H2OFLEX_DISPATCH(scores, average_over_heads, scores);
}

Tensor empty(Shape shape, DType dtype, Device device) {
  if (device.is_cpu()) return Tensor::empty(std::move(shape), dtype);
#ifdef H2OFLEX_WITH_CUDA
  return cuda::device_empty(std::move(shape), dtype, device.index);
#else
  throw InternalError("a CUDA tensor was requested from a build without CUDA");
#endif
}

Tensor on_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor out = empty(t.shape(), t.dtype(), device).as_packed(t.packed());
  copy(t, out);
  return out;
}

void copy(const Tensor& src, Tensor& dst) {
  H2OFLEX_CHECK(src.nbytes() == dst.nbytes(), "copy: ", src.nbytes(), " bytes into ", dst.nbytes());
  if (!on_cuda(src) && !on_cuda(dst)) {
    cpu::copy(src, dst);
    return;
  }
#ifdef H2OFLEX_WITH_CUDA
  cuda::copy(src, dst);
#else
  throw InternalError("copy: CUDA tensor in a build without CUDA");
#endif
}

void fill(Tensor& t, float value) {
  H2OFLEX_CHECK(t.dtype() == DType::F32 || t.dtype() == DType::I32, "fill: f32 or i32, got ",
                dtype_name(t.dtype()));
  H2OFLEX_DISPATCH(t, fill, t, value);
}

void synchronize(Device device) {
#ifdef H2OFLEX_WITH_CUDA
  if (device.is_cuda()) {
    const cuda::DeviceGuard guard(device.index);
    cuda::synchronize();
  }
#else
  H2OFLEX_CHECK(device.is_cpu(), "synchronize: CUDA in a build without CUDA");
#endif
}

namespace {

// Slot storage [b, h, cap, d] with its positions and scores [b, h, cap], all on one device.
void check_slots(const Tensor& k_slots, const Tensor& v_slots, const Tensor& slot_pos,
                 const Tensor& slot_score, const char* op) {
  H2OFLEX_CHECK(is_kv_storage(k_slots) && k_slots.rank() == 4, op, ": k_slots ",
                shape_str(k_slots.shape()));
  H2OFLEX_CHECK(v_slots.shape() == k_slots.shape() && v_slots.dtype() == k_slots.dtype(), op,
                ": v_slots");
  expect(slot_pos, DType::I32, 3, op, "slot_pos");
  expect(slot_score, DType::F32, 3, op, "slot_score");
  const Shape meta{k_slots.dim(0), k_slots.dim(1), k_slots.dim(2)};
  H2OFLEX_CHECK(slot_pos.shape() == meta && slot_score.shape() == meta, op,
                ": slot metadata must be ", shape_str(meta));
  same_device(k_slots, v_slots, op);
  same_device(k_slots, slot_pos, op);
  same_device(k_slots, slot_score, op);
}

}  // namespace

void kv_scatter_prefill(const Tensor& k, const Tensor& v, const Tensor& keep,
                        const Tensor* keep_score, bool compact, Tensor& k_slots, Tensor& v_slots,
                        Tensor& slot_pos, Tensor& slot_score) {
  const char* op = "kv_scatter_prefill";
  expect(k, DType::F32, 4, op, "k");
  H2OFLEX_CHECK(v.shape() == k.shape(), op, ": v shape");
  expect(keep, DType::I32, 3, op, "keep");
  check_slots(k_slots, v_slots, slot_pos, slot_score, op);
  const int64_t b = k.dim(0), s = k.dim(1), h = k.dim(2), d = k.dim(3);
  H2OFLEX_CHECK(keep.dim(0) == b && keep.dim(1) == h, op, ": keep ", shape_str(keep.shape()));
  H2OFLEX_CHECK(
      k_slots.dim(0) == b && k_slots.dim(1) == h && k_slots.dim(3) == slot_row(k_slots, d), op,
      ": slots ", shape_str(k_slots.shape()), " for k ", shape_str(k.shape()));
  H2OFLEX_CHECK(compact ? keep.dim(2) <= k_slots.dim(2) : s <= k_slots.dim(2), op, ": keeping ",
                compact ? keep.dim(2) : s, " tokens in ", k_slots.dim(2), " slots");
  if (keep_score) {
    expect(*keep_score, DType::F32, 3, op, "keep_score");
    H2OFLEX_CHECK(keep_score->shape() == (Shape{b, h, s}), op, ": keep_score shape");
    same_device(k, *keep_score, op);
  }
  same_device(k, v, op);
  same_device(k, keep, op);
  same_device(k, k_slots, op);
  H2OFLEX_DISPATCH(k, kv_scatter_prefill, k, v, keep, keep_score, compact, k_slots, v_slots,
                   slot_pos, slot_score);
}

void kv_insert(const Tensor& k_new, const Tensor& v_new, const Tensor* victim, int32_t position,
               const Tensor* new_score, float fixed_score, Tensor& k_slots, Tensor& v_slots,
               Tensor& slot_pos, Tensor& slot_score, Tensor& changed) {
  const char* op = "kv_insert";
  expect(k_new, DType::F32, 3, op, "k_new");
  H2OFLEX_CHECK(v_new.shape() == k_new.shape(), op, ": v_new shape");
  check_slots(k_slots, v_slots, slot_pos, slot_score, op);
  const int64_t b = k_new.dim(0), h = k_new.dim(1);
  H2OFLEX_CHECK(k_slots.dim(0) == b && k_slots.dim(1) == h &&
                    k_slots.dim(3) == slot_row(k_slots, k_new.dim(2)),
                op, ": slots ", shape_str(k_slots.shape()), " for k_new ",
                shape_str(k_new.shape()));
  expect(changed, DType::I32, -1, op, "changed");
  H2OFLEX_CHECK(changed.numel() == b * h, op, ": changed size");
  if (victim) {
    expect(*victim, DType::I32, -1, op, "victim");
    H2OFLEX_CHECK(victim->numel() == b * h, op, ": victim size");
    same_device(k_new, *victim, op);
  } else {
    H2OFLEX_CHECK(position >= 0 && position < k_slots.dim(2), op, ": full cache capacity ",
                  k_slots.dim(2), " exhausted at position ", position);
  }
  if (new_score) {
    expect(*new_score, DType::F32, -1, op, "new_score");
    H2OFLEX_CHECK(new_score->numel() == b * h, op, ": new_score size");
    same_device(k_new, *new_score, op);
  }
  same_device(k_new, v_new, op);
  same_device(k_new, k_slots, op);
  same_device(k_new, changed, op);
  H2OFLEX_DISPATCH(k_new, kv_insert, k_new, v_new, victim, position, new_score, fixed_score,
                   k_slots, v_slots, slot_pos, slot_score, changed);
}

}  // namespace h2oflex::ops
