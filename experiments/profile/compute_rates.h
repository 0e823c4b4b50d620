// `profile`'s compute measurements: the GEMMs and the attention of an OPT decoder layer alone,
// and whole layers run by the in-RAM engine.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/generator.h"
#include "experiments/common/bench_timing.h"
#include "experiments/profile/profile_command.h"
#include "models/opt/opt_config.h"
#include "models/opt/opt_model.h"
#include "runtime/core/tensor.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

// Seeded normal values (stddev `stddev`) in `dtype`.
Tensor random_tensor(Shape shape, DType dtype, uint64_t stream, float stddev);

// The six GEMMs of one OPT decoder layer (q, k, v, out: h x h; fc1: h -> 4h; fc2: 4h -> h) on
// `rows` rows through ops::linear, as the engine runs them. Returns the seconds of one layer.
struct LayerGemms {
  Tensor w_hh, w_fc1, w_fc2, b_h, b_f;
  int64_t h, f;
  LayerGemms(int64_t hidden, int64_t ffn, DType wdt)
      : w_hh(random_tensor({hidden, hidden}, wdt, 1, 0.02f)),
        w_fc1(random_tensor({ffn, hidden}, wdt, 2, 0.02f)),
        w_fc2(random_tensor({hidden, ffn}, wdt, 3, 0.02f)),
        b_h(Tensor::zeros({hidden}, DType::F32)),
        b_f(Tensor::zeros({ffn}, DType::F32)),
        h(hidden),
        f(ffn) {}
  double weight_bytes() const {
    return static_cast<double>(w_hh.nbytes()) * 4 + static_cast<double>(w_fc1.nbytes()) +
           static_cast<double>(w_fc2.nbytes());
  }
  double flops(int rows) const { return 2.0 * rows * (4.0 * h * h + 2.0 * h * f); }
  double seconds(int rows, ops::ComputeType ct, int repeats) const {
    Tensor x = random_tensor({rows, h}, DType::F32, 4, 1.0f);
    Tensor mid = Tensor::empty({rows, f}, DType::F32);
    Tensor out = Tensor::empty({rows, h}, DType::F32);
    return median_seconds(repeats, [&] {
      // The four h x h projections use the same matrix: each call streams it again, as four
      // distinct matrices would once the layer's weights exceed the caches.
      for (int i = 0; i < 4; ++i) ops::linear(x, w_hh, &b_h, out, ct);
      ops::linear(x, w_fc1, &b_f, mid, ct, /*relu=*/true);
      ops::linear(mid, w_fc2, &b_h, out, ct);
    });
  }
};

// FLOP/s of ops::attention_prefill over f32 q/k/v of options.attn_batch x attn_prefill_len.
double measure_attention_prefill(const ProfileOptions& o, const OptConfig& cfg, ops::ComputeType ct,
                                 int repeats);
// FLOP/s of ops::attention_decode over a `kv_dtype` cache of options.attn_decode_ctx tokens.
double measure_attention_decode(const ProfileOptions& o, const OptConfig& cfg, DType kv_dtype,
                                int repeats);

// Seconds of one decoder layer, by difference of a 3-layer and a 1-layer copy of `ref` run by
// the in-RAM engine: prefill of `batch` prompts of `len` tokens, and one decode step (over a
// context of ~len tokens). The fastest of `repeats` runs of each: other work on a shared
// machine only ever slows a run down.
struct LayerTimes {
  double prefill = 0, decode_step = 0;
};

// A 1-layer and a 3-layer copy of the reference model with dummy weights.
struct LayerModels {
  static constexpr int kLayers[2] = {1, 3};
  OptConfig cfg[2];
  std::unique_ptr<OptModel> model[2];
  ModelWeights weights[2];
  LayerModels(const OptConfig& ref, DType wdt) {
    for (int i = 0; i < 2; ++i) {
      cfg[i] = ref;
      cfg[i].layers = kLayers[i];
      model[i] = std::make_unique<OptModel>(cfg[i]);
      weights[i] = load_model_weights(*model[i], wdt, dummy_weight_producer(1));
    }
  }
};

LayerTimes layer_times(const LayerModels& models, ops::ComputeType ct, int batch, int len,
                       int steps, int repeats);

}  // namespace h2oflex
