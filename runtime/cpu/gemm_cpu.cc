// linear(): x · Wᵀ (+ bias, + ReLU) through oneDNN's matmul primitive.
//
// Weights are stored [out, in] row-major, which is W as a [K, N] matrix with strides (1, K):
// oneDNN reads it transposed in place, so weights are never copied or re-laid out. Primitives are
// cached per shape because creating one costs far more than a decode-step GEMM.
#include <omp.h>
#include <dnnl.hpp>

#include <algorithm>

#include <map>
#include <mutex>
#include <tuple>

#include "runtime/core/cpu_memory_reserve.h"
#include "runtime/core/half.h"
#include "runtime/cpu/cpu_ops.h"
#include "runtime/cpu/gemm_bf16.h"
#include "runtime/cpu/linear_compressed.h"
#include "runtime/cpu/linear_few_rows.h"
#include "runtime/cpu/parallel_threshold.h"

namespace h2oflex::cpu {

namespace {

using dnnl::memory;
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, bool, bool>;

struct Gemm {
  dnnl::matmul prim;
  memory::desc src, wei, bias, dst;
  memory::desc scratchpad;  // where the caller gives the primitive its scratch memory
};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::data_type dnnl_type(DType t) {
  switch (t) {
    case DType::F32:
      return memory::data_type::f32;
    case DType::BF16:
      return memory::data_type::bf16;
    case DType::F16:
      return memory::data_type::f16;
    default:
      throw InternalError("linear: unsupported dtype");
  }
}

// out rows of stride ldo (>= n): a piece of a wider output can be written in place.
const Gemm& get_gemm(int64_t m, int64_t k, int64_t n, int64_t ldo, DType act, DType wt, bool bias,
                     bool relu) {
  static std::mutex mu;
  static std::map<Key, Gemm> cache;
  const Key key{m, k, n, ldo, static_cast<int>(act), static_cast<int>(wt), bias, relu};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Gemm g;
  g.src = memory::desc({m, k}, dnnl_type(act), memory::dims{k, 1});
  g.wei = memory::desc({k, n}, dnnl_type(wt), memory::dims{1, k});
  g.dst = memory::desc({m, n}, memory::data_type::f32, memory::dims{ldo, 1});
  if (bias) g.bias = memory::desc({1, n}, memory::data_type::f32, memory::dims{n, 1});
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  auto pd = bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(g.src, g.wei, g.bias, g.dst),
                                                attr, cpu_engine())
                 : dnnl::matmul::primitive_desc(dnnl::matmul::desc(g.src, g.wei, g.dst), attr,
                                                cpu_engine());
  g.prim = dnnl::matmul(pd);
  return cache.emplace(key, std::move(g)).first->second;
}

// Per-thread scratch reused across calls, at least n values of T (activations converted to
// 16-bit, weights widened, the library's scratch memory); `which` keeps apart two buffers of one
// type in use at once.
template <typename T>
T* thread_scratch(size_t n, int which = 0) {
  thread_local std::vector<T> buf[2];
  if (buf[which].size() < n) buf[which].resize(n);
  return buf[which].data();
}

// Whether this machine's oneDNN has a matmul for 16-bit inputs of type `t` (builds and CPUs
// without AVX512-BF16 / AVX512-FP16 support refuse to create one). Asked once per type.
bool library_has_half_matmul(DType t) {
  static std::mutex mu;
  static std::map<int, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(static_cast<int>(t));
  if (it != known.end()) return it->second;
  bool ok = true;
  try {
    const memory::desc a({1, 16}, dnnl_type(t), memory::dims{16, 1});
    const memory::desc b({16, 16}, dnnl_type(t), memory::dims{1, 16});
    const memory::desc c({1, 16}, memory::data_type::f32, memory::dims{16, 1});
    dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), cpu_engine());
  } catch (const dnnl::error&) {
    ok = false;
  }
  known.emplace(static_cast<int>(t), ok);
  return ok;
}

// Rounds the f32 activations to the 16-bit type `t`, split over the OpenMP threads when there
// are many: a prefill activation matrix (M = batch x prompt) is millions of values, and on one
// thread its rounding took about as long as the AMX GEMM that follows it. Inside a parallel
// region (a piece of a compressed GEMM) it stays on the caller.
void narrow_activations(DType t, const float* in, uint16_t* out, int64_t n) {
  constexpr int64_t kChunk = int64_t{1} << 15;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n > kParallelMinElements && omp_in_parallel() == 0)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    const auto count = static_cast<size_t>(std::min(kChunk, n - begin));
    if (t == DType::BF16) {
      convert_f32_to_bf16(in + begin, out + begin, count);
    } else {
      convert_f32_to_f16(in + begin, out + begin, count);
    }
  }
}

// One stream per calling thread: creating it per call cost a decode GEMM a few percent.
dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

// Widens n 16-bit values of type t into f32.
void widen(DType t, const uint16_t* in, float* out, int64_t n) {
  if (t == DType::BF16) {
    convert_bf16_to_f32(in, out, n);
  } else {
    convert_f16_to_f32(in, out, n);
  }
}

// One GEMM of the library: out[m, :n] (row stride ldo) = src · weiᵀ (+ bias) (then ReLU).
void run_gemm(int64_t m, int64_t k, int64_t n, int64_t ldo, DType act, DType wt, const void* src,
              const void* wei, const float* bias, float* out, bool relu) {
  const Gemm& g = get_gemm(m, k, n, ldo, act, wt, bias != nullptr, relu);
  dnnl::stream& stream = thread_stream();
  const dnnl::engine& eng = cpu_engine();
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(g.src, eng, const_cast<void*>(src))},
      {DNNL_ARG_WEIGHTS, memory(g.wei, eng, const_cast<void*>(wei))},
      {DNNL_ARG_DST, memory(g.dst, eng, out)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(g.bias, eng, const_cast<float*>(bias)));
  g.prim.execute(stream, args);
  stream.wait();
}

// The kernels of gemm_bf16_f32, per (m, n, k, lda, b_row, b_col, ldc).
using SmallKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

const Gemm& get_small_gemm(const SmallKey& key) {
  static std::mutex mu;
  static std::map<SmallKey, Gemm> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto [m, n, k, lda, b_row, b_col, ldc] = key;
  Gemm g;
  g.src = memory::desc({m, k}, memory::data_type::bf16, memory::dims{lda, 1});
  g.wei = memory::desc({k, n}, memory::data_type::bf16, memory::dims{b_row, b_col});
  g.dst = memory::desc({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
  // Threads run the same shape at once, and a primitive's own scratch memory (where it packs an
  // operand) is not safe to share: each thread gives its own (thread_scratch).
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(g.src, g.wei, g.dst), attr,
                                        cpu_engine());
  g.scratchpad = pd.scratchpad_desc();
  g.prim = dnnl::matmul(pd);
  return cache.emplace(key, std::move(g)).first->second;
}

// Rows of a k-wide input rounded to 16 bits at a time (cpu_memory_reserve.h bounds the scratch).
int64_t input_chunk_rows(int64_t k) {
  return std::max<int64_t>(
      1, static_cast<int64_t>(cpu_reserve::kGemmInputChunkBytes / (2 * static_cast<uint64_t>(k))));
}

// One weight [n, k] of a 16-bit product and where its output goes (rows of stride ldo).
struct NativePart {
  const void* w;
  int64_t n;
  const float* bias;
  float* out;
  int64_t ldo;
  bool relu;
};

// x · Wᵀ for every part through the library's own 16-bit kernel (x f32 [m, k], the weights in
// `act`). Each chunk of rows of x is rounded once for all the parts (q, k and v share their
// input); each output row depends on its own input row only.
void native_16bit_parts(const Tensor& x, DType act, std::span<const NativePart> parts) {
  const int64_t m = x.dim(0), k = x.dim(1), chunk = input_chunk_rows(k);
  uint16_t* narrow = thread_scratch<uint16_t>(static_cast<size_t>(std::min(chunk, m) * k));
  for (int64_t r0 = 0; r0 < m; r0 += chunk) {
    const int64_t mc = std::min(chunk, m - r0);
    narrow_activations(act, x.data<float>() + r0 * k, narrow, mc * k);
    for (const NativePart& p : parts) {
      run_gemm(mc, k, p.n, p.ldo, act, act, narrow, p.w, p.bias, p.out + r0 * p.ldo, p.relu);
    }
  }
}

}  // namespace

void gemm_bf16_f32(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda,
                   const uint16_t* b, int64_t b_row, int64_t b_col, float* c, int64_t ldc) {
  const Gemm& g = get_small_gemm({m, n, k, lda, b_row, b_col, ldc});
  const dnnl::engine& eng = cpu_engine();
  dnnl::stream& stream = thread_stream();
  g.prim.execute(stream,
                 {{DNNL_ARG_SRC, memory(g.src, eng, const_cast<uint16_t*>(a))},
                  {DNNL_ARG_WEIGHTS, memory(g.wei, eng, const_cast<uint16_t*>(b))},
                  {DNNL_ARG_DST, memory(g.dst, eng, c)},
                  {DNNL_ARG_SCRATCHPAD,
                   memory(g.scratchpad, eng, thread_scratch<uint8_t>(g.scratchpad.get_size()))}});
  stream.wait();
}

bool gemm_has_kernel(ComputeType ct) {
  if (ct == ComputeType::F32) return true;
  return library_has_half_matmul(ops::operand_dtype(ct));
}

void linear_into(const Tensor& x, const void* w, DType wt, int64_t n, const float* bias, float* out,
                 int64_t ldo, ComputeType ct, bool relu) {
  const int64_t m = x.dim(0), k = x.dim(1);
  if (ct == ComputeType::F32) {
    const void* wei = w;
    if (wt != DType::F32) {  // widen 16-bit weights (slow path: store weights in f32 instead)
      float* wide = thread_scratch<float>(static_cast<size_t>(n * k));
      widen(wt, static_cast<const uint16_t*>(w), wide, n * k);
      wei = wide;
    }
    run_gemm(m, k, n, ldo, DType::F32, DType::F32, x.data<float>(), wei, bias, out, relu);
    return;
  }
  const DType act = ops::operand_dtype(ct);
  H2OFLEX_CHECK(wt == act, "linear: ", dtype_name(act), " compute needs ", dtype_name(act),
                " weights, got ", dtype_name(wt));
  if (act == DType::BF16 && m <= kFewRowsBf16 && few_rows_bf16_available()) {
    // A decode step's few rows: bound by the weights' bytes (linear_few_rows.h).
    uint16_t* narrow = thread_scratch<uint16_t>(static_cast<size_t>(m * k));
    narrow_activations(act, x.data<float>(), narrow, m * k);
    linear_few_rows_bf16(narrow, m, k, static_cast<const uint16_t*>(w), n, bias, out, ldo, relu);
    return;
  }
  if (library_has_half_matmul(act)) {
    const NativePart part{w, n, bias, out, ldo, relu};
    native_16bit_parts(x, act, {&part, 1});
    return;
  }
  // The same arithmetic without the library's 16-bit kernel: inputs rounded to the 16-bit type,
  // then widened, and an f32 GEMM (the 16-bit kernels accumulate in f32 too), in chunks of rows
  // as native_16bit_parts.
  float* ws = thread_scratch<float>(static_cast<size_t>(n * k), 1);
  widen(wt, static_cast<const uint16_t*>(w), ws, n * k);
  const int64_t chunk = input_chunk_rows(k);
  uint16_t* narrow = thread_scratch<uint16_t>(static_cast<size_t>(std::min(chunk, m) * k));
  for (int64_t r0 = 0; r0 < m; r0 += chunk) {
    const int64_t mc = std::min(chunk, m - r0);
    narrow_activations(act, x.data<float>() + r0 * k, narrow, mc * k);
    float* xs = thread_scratch<float>(static_cast<size_t>(mc * k), 0);
    widen(act, narrow, xs, mc * k);
    run_gemm(mc, k, n, ldo, DType::F32, DType::F32, xs, ws, bias, out + r0 * ldo, relu);
  }
}

void linear_same_input(const Tensor& x, std::span<const ops::LinearOut> parts, ComputeType ct) {
  const int64_t m = x.dim(0), k = x.dim(1);
  const bool few_rows = ct == ComputeType::BF16 && m <= kFewRowsBf16 && few_rows_bf16_available() &&
                        std::all_of(parts.begin(), parts.end(), [](const ops::LinearOut& p) {
                          return p.w->dtype() == DType::BF16;
                        });
  if (!few_rows) {
    const DType act = ops::operand_dtype(ct);
    const bool native = ct != ComputeType::F32 && library_has_half_matmul(act) &&
                        std::all_of(parts.begin(), parts.end(),
                                    [act](const ops::LinearOut& p) { return p.w->dtype() == act; });
    if (!native) {
      for (const ops::LinearOut& p : parts) linear(x, *p.w, p.bias, *p.out, ct, p.relu);
      return;
    }
    std::vector<NativePart> natives;
    for (const ops::LinearOut& p : parts) {
      natives.push_back({p.w->raw(), p.w->dim(0),
                         p.bias != nullptr ? p.bias->data<float>() : nullptr, p.out->data<float>(),
                         p.w->dim(0), p.relu});
    }
    native_16bit_parts(x, act, natives);
    return;
  }
  uint16_t* narrow = thread_scratch<uint16_t>(static_cast<size_t>(m * k));
  narrow_activations(DType::BF16, x.data<float>(), narrow, m * k);
  std::vector<FewRowsProduct> products;
  for (const ops::LinearOut& p : parts) {
    products.push_back({p.w->data<uint16_t>(), p.w->dim(0),
                        p.bias != nullptr ? p.bias->data<float>() : nullptr, p.out->data<float>(),
                        p.w->dim(0), p.relu});
  }
  linear_few_rows_bf16(narrow, m, k, products);
}

void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out, ComputeType ct,
            bool relu) {
  if (w.packed() != PackedFormat::None) {
    linear_compressed(x, w, bias, out, ct, relu);
    return;
  }
  const int64_t n = w.dim(0);
  linear_into(x, w.raw(), w.dtype(), n, bias ? bias->data<float>() : nullptr, out.data<float>(), n,
              ct, relu);
}

}  // namespace h2oflex::cpu
