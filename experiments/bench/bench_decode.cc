#include "experiments/bench/bench_decode.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <numeric>

#include "engine/generator.h"
#include "engine/model_footprint.h"
#include "experiments/common/bench_timing.h"
#include "experiments/common/memory_rate.h"
#include "experiments/common/output_paths.h"
#include "models/opt/opt_model.h"
#include "runtime/core/rng.h"
#include "runtime/core/storage_format.h"
#include "runtime/core/timer.h"

namespace h2oflex {

std::vector<std::vector<int32_t>> bench_prompts(int64_t vocab, int batch, int len) {
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < len; ++t) {
      prompts[b].push_back(4 + static_cast<int32_t>(philox4x32(1, b, t)[0] % (vocab - 4)));
    }
  }
  return prompts;
}

int bench_decode(const BenchComputeOptions& o, const OptConfig& cfg, ops::ComputeType ct) {
  H2OFLEX_INPUT_CHECK(o.gen_len >= 2, "bench decode: --gen-len must be >= 2 (one decode step)");
  const DType wdt = matrix_dtype_for(ct);
  const char* type_name = dtype_name(wdt).data();
  const OptModel model(cfg);
  const ModelWeights w = load_model_weights(model, wdt, dummy_weight_producer(1));
  const policy::ModelFootprint fp = model_footprint(model, wdt);
  const double weight_bytes = static_cast<double>(
      std::accumulate(fp.tensor_bytes.begin(), fp.tensor_bytes.end(), uint64_t{0}));

  GenerationSettings g;
  g.gen_len = o.gen_len;
  g.stop_at_eos = false;
  g.compute = ct;
  g.kv_dtype = wdt;
  // Step s's logits are shown when step s - 1's computation ends: the gaps between the calls
  // are the decode steps (each also chooses its batch's tokens, a few microseconds).
  std::vector<double> shown;
  g.on_logits = [&](int step, const Tensor&) {
    if (step >= 0) shown.push_back(now_seconds());
  };
  const MemoryRates before = measure_memory_rates(o.memory_rate_bytes, o.repeats, true);
  generate_in_ram(model, w, bench_prompts(cfg.vocab, o.batch, o.prompt_len), g);
  const MemoryRates after = measure_memory_rates(o.memory_rate_bytes, o.repeats, true);
  std::vector<double> steps;
  for (size_t i = 1; i < shown.size(); ++i) steps.push_back(shown[i] - shown[i - 1]);
  const Spread step = spread_of(steps);

  // Decode attention reads each sequence's filled rows: prompt_len + s of them at step s.
  const double kv_row_bytes =
      static_cast<double>(kv_storage_format(wdt, PackedFormat::None).bytes(fp.head_dim));
  const double mean_rows = o.prompt_len + (static_cast<double>(steps.size()) - 1) / 2;
  const double kv_bytes = 2.0 * fp.layers * o.batch * fp.kv_heads * mean_rows * kv_row_bytes;
  const Spread copy = spread_of({before.copy_bps, after.copy_bps});
  const double weights_at_copy = weight_bytes / copy.min;  // the slower of the two measurements
  const double all_at_copy = (weight_bytes + kv_bytes) / copy.min;

  std::printf("decode %s dummy in RAM, batch %d x (%d + %d), %s: %zu steps\n", cfg.name.c_str(),
              o.batch, o.prompt_len, o.gen_len, type_name, steps.size());
  std::printf("  step min / median / max: %.4f / %.4f / %.4f s\n", step.min, step.median, step.max);
  std::printf("  reads per step: weights %.3f GB, KV cache %.3f GB (mean over the steps)\n",
              weight_bytes / 1e9, kv_bytes / 1e9);
  std::printf(
      "  memory, all threads, before / after: copy %.1f / %.1f GB/s, read %.1f / %.1f GB/s\n",
      before.copy_bps / 1e9, after.copy_bps / 1e9, before.read_bps / 1e9, after.read_bps / 1e9);
  std::printf("  median step / weights at the copy rate: %.2f (%.4f s)\n",
              step.median / weights_at_copy, weights_at_copy);
  std::printf("  median step / weights + KV at the copy rate: %.2f (%.4f s)\n",
              step.median / all_at_copy, all_at_copy);
  if (!o.json_out.empty()) {
    const nlohmann::json j = {
        {"model", cfg.name},
        {"batch", o.batch},
        {"prompt_len", o.prompt_len},
        {"gen_len", o.gen_len},
        {"compute_dtype", type_name},
        {"step_s", {{"min", step.min}, {"median", step.median}, {"max", step.max}}},
        {"weight_bytes", weight_bytes},
        {"kv_bytes_per_step", kv_bytes},
        {"copy_bps", {before.copy_bps, after.copy_bps}},
        {"read_bps", {before.read_bps, after.read_bps}},
        {"step_over_weights_at_copy", step.median / weights_at_copy},
        {"step_over_weights_and_kv_at_copy", step.median / all_at_copy}};
    write_file_atomically(o.json_out, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace h2oflex
