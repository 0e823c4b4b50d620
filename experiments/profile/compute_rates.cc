#include "experiments/profile/compute_rates.h"

#include <algorithm>

#include "engine/model_footprint.h"
#include "experiments/common/bench_timing.h"
#include "runtime/core/rng.h"
#include "runtime/ops/compute_choice.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

Tensor random_tensor(Shape shape, DType dtype, uint64_t stream, float stddev) {
  Tensor f = Tensor::empty(shape, DType::F32);
  fill_normal(f.data<float>(), static_cast<uint64_t>(f.numel()), 7, stream, 0, 0.0f, stddev);
  return dtype == DType::F32 ? f : to_dtype(f, dtype);
}

double measure_attention_prefill(const ProfileOptions& o, const OptConfig& cfg, ops::ComputeType ct,
                                 int repeats) {
  const int64_t b = o.attn_batch, s = o.attn_prefill_len, heads = cfg.heads, d = cfg.head_dim();
  Tensor q = random_tensor({b, s, heads, d}, DType::F32, 5, 1.0f);
  Tensor k = random_tensor({b, s, heads, d}, DType::F32, 6, 1.0f);
  Tensor v = random_tensor({b, s, heads, d}, DType::F32, 7, 1.0f);
  Tensor out = Tensor::empty({b, s, heads, d}, DType::F32);
  const std::vector<int32_t> pad(static_cast<size_t>(b), 0);
  const double t = median_seconds(
      repeats, [&] { ops::attention_prefill(q, k, v, pad, 0.125f, out, nullptr, ct); });
  // The cost model's count: the full s^2 (FlexGen does not halve it for the causal mask).
  return static_cast<double>(b) * 4.0 * s * s * cfg.hidden / t;
}

double measure_attention_decode(const ProfileOptions& o, const OptConfig& cfg, DType kv_dtype,
                                int repeats) {
  const int64_t b = o.attn_batch, ctx = o.attn_decode_ctx, heads = cfg.heads, d = cfg.head_dim();
  Tensor kc = random_tensor({b, heads, ctx, d}, kv_dtype, 8, 1.0f);
  Tensor vc = random_tensor({b, heads, ctx, d}, kv_dtype, 9, 1.0f);
  Tensor pos = Tensor::empty({b, heads, ctx}, DType::I32);
  for (int64_t i = 0; i < pos.numel(); ++i) pos.data<int32_t>()[i] = static_cast<int32_t>(i % ctx);
  Tensor q = random_tensor({b, heads, d}, DType::F32, 10, 1.0f);
  Tensor kn = random_tensor({b, heads, d}, DType::F32, 11, 1.0f);
  Tensor vn = random_tensor({b, heads, d}, DType::F32, 12, 1.0f);
  Tensor out = Tensor::empty({b, heads, d}, DType::F32);
  const double t = median_seconds(repeats, [&] {
    ops::attention_decode(q, kc, vc, pos, kn, vn, 0.125f, out, nullptr, nullptr);
  });
  return static_cast<double>(b) * 4.0 * ctx * cfg.hidden / t;  // q.K and p.V, 2 FLOPs each
}

LayerTimes layer_times(const LayerModels& models, ops::ComputeType ct, int batch, int len,
                       int steps, int repeats) {
  const OptConfig& ref = models.cfg[0];
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < len; ++t) {
      prompts[b].push_back(4 + static_cast<int32_t>(philox4x32(3, b, t)[0] % (ref.vocab - 4)));
    }
  }
  GenerationSettings g;
  g.gen_len = steps + 1;
  g.stop_at_eos = false;
  g.compute = ct;
  g.kv_dtype = matrix_dtype_for(ct);
  double prefill[2], decode[2];
  for (int i = 0; i < 2; ++i) {
    prefill[i] = decode[i] = 1e30;
    for (int r = 0; r <= repeats; ++r) {  // the first run warms up
      const GenerateOutput out = generate_in_ram(*models.model[i], models.weights[i], prompts, g);
      if (r == 0) continue;
      prefill[i] = std::min(prefill[i], out.prefill_s);
      decode[i] = std::min(decode[i], out.decode_s);
    }
  }
  const double layers = LayerModels::kLayers[1] - LayerModels::kLayers[0];
  LayerTimes t;
  // Floors keep a noisy difference from going to zero or below.
  t.prefill = std::max(prefill[1] - prefill[0], 0.05 * prefill[1]) / layers;
  t.decode_step = std::max(decode[1] - decode[0], 0.05 * decode[1]) / layers / steps;
  return t;
}

}  // namespace h2oflex
