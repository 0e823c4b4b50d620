#include "experiments/bench/bench_gemm.h"

#include <dnnl.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "experiments/bench/bench_decode.h"
#include "experiments/common/bench_timing.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/run_config.h"
#include "models/opt/opt_model.h"
#include "runtime/core/half.h"
#include "runtime/core/rng.h"
#include "runtime/core/timer.h"

namespace h2oflex {

namespace {

struct Shape3 {
  const char* name;
  int64_t m, k, n;
};

// n normal values of standard deviation `scale` in `type` into m.
void fill_operand(dnnl::memory& m, int64_t n, DType type, uint64_t stream, float scale) {
  std::vector<float> values(static_cast<size_t>(n));
  fill_normal(values.data(), static_cast<uint64_t>(n), 1, stream, 0, 0.0f, scale);
  if (type == DType::F32) {
    std::copy(values.begin(), values.end(), static_cast<float*>(m.get_data_handle()));
  } else if (type == DType::BF16) {
    convert_f32_to_bf16(values.data(), static_cast<uint16_t*>(m.get_data_handle()), values.size());
  } else {
    convert_f32_to_f16(values.data(), static_cast<uint16_t*>(m.get_data_handle()), values.size());
  }
}

// oneDNN's own matmul on the same shape with inputs already in the compute type: the rate the
// engine's linear() can at best reach (it adds the f32 -> bf16 activation conversion).
// Returns 0 where the library has no matmul for the type.
double raw_onednn_seconds(const Shape3& s, DType type, int repeats) {
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  const auto dt = type == DType::BF16  ? memory::data_type::bf16
                  : type == DType::F16 ? memory::data_type::f16
                                       : memory::data_type::f32;
  memory::desc src({s.m, s.k}, dt, memory::dims{s.k, 1});
  memory::desc wei({s.k, s.n}, dt, memory::dims{1, s.k});
  memory::desc dst({s.m, s.n}, memory::data_type::f32, memory::dims{s.n, 1});
  dnnl::matmul prim;
  try {
    prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), eng));
  } catch (const dnnl::error&) {
    return 0;
  }
  memory a(src, eng), b(wei, eng), c(dst, eng);
  // The same values as engine_linear_seconds' (not a constant fill): the matrix units' power,
  // and so their clock, depends on the data.
  fill_operand(a, s.m * s.k, type, 1, 1.0f);
  fill_operand(b, s.k * s.n, type, 2, 0.02f);
  return median_seconds(repeats, [&] {
    prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  });
}

double engine_linear_seconds(const Shape3& s, ops::ComputeType ct, int repeats) {
  const DType wdt = matrix_dtype_for(ct);
  Tensor x = Tensor::empty({s.m, s.k}, DType::F32);
  fill_normal(x.data<float>(), static_cast<uint64_t>(x.numel()), 1, 1, 0, 0.0f, 1.0f);
  Tensor w32 = Tensor::empty({s.n, s.k}, DType::F32);
  fill_normal(w32.data<float>(), static_cast<uint64_t>(w32.numel()), 1, 2, 0, 0.0f, 0.02f);
  Tensor w = to_dtype(w32, wdt);
  Tensor bias = Tensor::zeros({s.n}, DType::F32);
  Tensor out = Tensor::empty({s.m, s.n}, DType::F32);
  return median_seconds(repeats, [&] { ops::linear(x, w, &bias, out, ct); });
}

// The model's prefill attention alone (with H2O's column sums) for one layer, in seconds.
double attention_prefill_seconds(const OptConfig& cfg, int64_t batch, int64_t len,
                                 ops::ComputeType ct, int repeats) {
  const int64_t heads = cfg.heads, d = cfg.head_dim();
  Tensor q = Tensor::empty({batch, len, heads, d}, DType::F32);
  Tensor k = Tensor::empty({batch, len, heads, d}, DType::F32);
  Tensor v = Tensor::empty({batch, len, heads, d}, DType::F32);
  uint64_t stream = 3;
  for (Tensor* t : {&q, &k, &v}) {
    fill_normal(t->data<float>(), static_cast<uint64_t>(t->numel()), 1, stream++, 0, 0.0f, 1.0f);
  }
  Tensor out = Tensor::empty({batch, len, heads, d}, DType::F32);
  Tensor colsum = Tensor::empty({batch, heads, len}, DType::F32);
  const std::vector<int32_t> pad(static_cast<size_t>(batch), 0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  return median_seconds(repeats,
                        [&] { ops::attention_prefill(q, k, v, pad, scale, out, &colsum, ct); });
}

void write_json(const std::string& path, const nlohmann::json& j) {
  if (!path.empty()) write_file_atomically(path, j.dump(2) + "\n");
}

int bench_gemm(const BenchComputeOptions& o, const OptConfig& cfg, ops::ComputeType ct) {
  const DType wdt = matrix_dtype_for(ct);
  const char* type_name = dtype_name(wdt).data();
  const int64_t h = cfg.hidden, f = cfg.ffn;
  const int64_t rows_p = static_cast<int64_t>(o.batch) * o.prompt_len, rows_d = o.batch;
  const Shape3 shapes[] = {{"prefill qkv/out", rows_p, h, h}, {"prefill fc1", rows_p, h, f},
                           {"prefill fc2", rows_p, f, h},     {"decode qkv/out", rows_d, h, h},
                           {"decode fc1", rows_d, h, f},      {"decode fc2", rows_d, f, h}};
  std::printf("GEMM rates for %s shapes, %s compute (GFLOP/s, median of %d)\n", cfg.name.c_str(),
              type_name, o.repeats);
  std::printf("%-16s %8s %6s %6s %12s %12s %7s\n", "shape", "M", "K", "N", "h2oflex", "oneDNN",
              "ratio");
  nlohmann::json rows = nlohmann::json::array();
  for (const Shape3& s : shapes) {
    const double flop = 2.0 * s.m * s.k * s.n;
    const double ours = flop / engine_linear_seconds(s, ct, o.repeats) / 1e9;
    const double raw_s = raw_onednn_seconds(s, wdt, o.repeats);
    const double raw = raw_s > 0 ? flop / raw_s / 1e9 : 0;  // 0: no kernel for the type
    std::printf("%-16s %8ld %6ld %6ld %12.1f %12.1f %7.2f\n", s.name, static_cast<long>(s.m),
                static_cast<long>(s.k), static_cast<long>(s.n), ours, raw, ours / raw);
    rows.push_back({{"shape", s.name},
                    {"m", s.m},
                    {"k", s.k},
                    {"n", s.n},
                    {"h2oflex_gflops", ours},
                    {"onednn_gflops", raw}});
  }
  write_json(o.json_out, {{"model", cfg.name}, {"compute_dtype", type_name}, {"rows", rows}});
  return 0;
}

// End-to-end prefill of a dummy model against the GEMM rate of its own prefill shapes.
int bench_prefill(const BenchComputeOptions& o, const OptConfig& cfg, ops::ComputeType ct) {
  const DType wdt = matrix_dtype_for(ct);
  const char* type_name = dtype_name(wdt).data();
  const OptModel model(cfg);
  const ModelWeights w = load_model_weights(model, wdt, dummy_weight_producer(1));
  const auto prompts = bench_prompts(cfg.vocab, o.batch, o.prompt_len);
  GenerationSettings g;
  g.gen_len = 1;
  g.compute = ct;
  g.kv_dtype = wdt;
  std::vector<double> times;
  for (int i = 0; i < std::max(1, o.repeats / 2); ++i) {
    times.push_back(generate_in_ram(model, w, prompts, g).prefill_s);
  }
  std::sort(times.begin(), times.end());
  const double t = times[times.size() / 2];
  const double tokens = static_cast<double>(o.batch) * o.prompt_len;
  const double h = static_cast<double>(cfg.hidden), f = static_cast<double>(cfg.ffn);
  // Matmul work of the decoder layers (the logits of the last position are negligible).
  const double gemm_flop = cfg.layers * tokens * 2.0 * (4 * h * h + 2 * h * f);
  double gemm_s = 0;
  const int64_t rows = static_cast<int64_t>(tokens);
  for (const Shape3& s :
       {Shape3{"qkv/out", rows, cfg.hidden, cfg.hidden}, Shape3{"fc1", rows, cfg.hidden, cfg.ffn},
        Shape3{"fc2", rows, cfg.ffn, cfg.hidden}}) {
    // The library's rate in the run's type, or in f32 where it has no kernel for that type.
    double one = raw_onednn_seconds(s, wdt, o.repeats);
    if (one == 0) one = raw_onednn_seconds(s, DType::F32, o.repeats);
    gemm_s += (s.n == s.k ? 4 : 1) * one;
  }
  gemm_s *= cfg.layers;
  const double attention_s =
      cfg.layers * attention_prefill_seconds(cfg, o.batch, o.prompt_len, ct, o.repeats);
  // Causal: each of the s queries meets (i + 1) keys, twice (scores and the weighted sum).
  const double attention_flop = cfg.layers * 2.0 * 2.0 * o.batch * cfg.hidden *
                                (static_cast<double>(o.prompt_len) * (o.prompt_len + 1) / 2);
  const double fraction = gemm_s / t;
  std::printf("prefill %s dummy, batch %d x %d tokens, %s: %.3f s end to end\n", cfg.name.c_str(),
              o.batch, o.prompt_len, type_name, t);
  std::printf("  the same GEMMs alone in oneDNN: %.3f s (%.1f GFLOP/s)\n", gemm_s,
              gemm_flop / gemm_s / 1e9);
  std::printf("  attention alone (with H2O's column sums): %.3f s (%.1f GFLOP/s causal)\n",
              attention_s, attention_flop / attention_s / 1e9);
  std::printf("  the rest (norms, activations, conversions, embedding): %.3f s\n",
              t - gemm_s - attention_s);
  std::printf("  end-to-end rate: %.1f GFLOP/s = %.1f%% of the GEMM rate\n", gemm_flop / t / 1e9,
              100 * fraction);
  write_json(o.json_out, {{"model", cfg.name},
                          {"batch", o.batch},
                          {"prompt_len", o.prompt_len},
                          {"prefill_s", t},
                          {"gemm_only_s", gemm_s},
                          {"attention_only_s", attention_s},
                          {"fraction_of_gemm_rate", fraction}});
  return 0;
}

}  // namespace

int run_bench_compute(const BenchComputeOptions& o) {
  check_output_paths({}, {{"--json", o.json_out}});
  auto cfg = opt_config_by_name(o.model);
  H2OFLEX_INPUT_CHECK(cfg.has_value(), "bench: unknown model '", o.model, "'");
  H2OFLEX_INPUT_CHECK(o.batch >= 1 && o.prompt_len >= 1 && o.repeats >= 1,
                      "bench: batch, prompt length and repeats must be >= 1");
  const ops::ComputeType ct = resolve_compute_type(o.compute_dtype);
  if (o.what == "gemm") return bench_gemm(o, *cfg, ct);
  if (o.what == "prefill") return bench_prefill(o, *cfg, ct);
  if (o.what == "decode") return bench_decode(o, *cfg, ct);
  throw InputError(
      detail::concat("bench: unknown benchmark '", o.what, "' (gemm, prefill or decode)"));
}

}  // namespace h2oflex
