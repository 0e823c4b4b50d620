#include "policy/pipeline_cost.h"

#include <algorithm>

#include "policy/search.h"
#include "policy/stage_shape.h"
#include "runtime/core/error.h"

namespace h2oflex::policy {

namespace {

// Seconds for one message of `bytes` over a stage's link.
double hop_seconds(const HardwareProfile& hw, double bytes) {
  return hw.stage_link_latency_s + bytes / hw.stage_link_rate();
}

}  // namespace

bool PipelineEstimate::fits() const {
  return std::all_of(stages.begin(), stages.end(),
                     [](const StageEstimate& s) { return s.memory_problem.empty(); });
}

PipelineEstimate estimate_pipeline(const ModelShape& model,
                                   const std::vector<HardwareProfile>& stage_hw, const Policy& p,
                                   const Workload& w, const HardwareLimits& limits,
                                   DecodeContext ctx) {
  const size_t S = stage_hw.size();
  const std::vector<StageRange> ranges =
      plan_stages(static_cast<size_t>(model.layers) + 2, S);  // InputError for a bad S
  PipelineEstimate e;
  e.blocks_in_flight = static_cast<int>(S);
  const double m = static_cast<double>(S);
  const double n = w.gen_len, bls = p.block_size();
  const double act = model.act_bytes * static_cast<double>(model.hidden) * bls;
  e.ids_bytes_decode_step = S > 1 ? 4 * bls : 0;

  double sum_p = 0, sum_g = 0, max_p = 0, max_g = 0;
  int slowest = 0;
  for (size_t j = 0; j < S; ++j) {
    StageEstimate st;
    st.units = ranges[j];
    const ModelShape shape = stage_model_shape(model, ranges[j]);
    st.layers = shape.layers;
    st.cost = estimate_cost(shape, stage_hw[j], p, w, ctx);
    st.prefill_s = st.cost.prefill_s;
    st.decode_step_s = n > 1 ? st.cost.decode_s / (n - 1) : 0;
    st.busy_s = m * st.cost.total_s;
    st.capacity = search_capacity(stage_hw[j], limits);
    st.memory_problem = memory_violation(st.cost.peak, st.capacity);
    const bool sends = j + 1 < S;
    st.send_bytes_prefill = sends ? act * w.prompt_len : 0;
    st.send_bytes_decode_step = sends ? act : 0;
    const double hop_p = sends ? hop_seconds(stage_hw[j], st.send_bytes_prefill) : 0;
    const double hop_g = sends ? hop_seconds(stage_hw[j], st.send_bytes_decode_step) : 0;
    sum_p += st.prefill_s + hop_p;
    sum_g += st.decode_step_s + hop_g;
    max_p = std::max({max_p, st.prefill_s, hop_p});
    if (st.decode_step_s > max_g) slowest = static_cast<int>(j);
    if (hop_g > max_g && hop_g > st.decode_step_s) slowest = -1 - static_cast<int>(j);
    max_g = std::max({max_g, st.decode_step_s, hop_g});
    e.stages.push_back(std::move(st));
  }
  const double back = S > 1 ? hop_seconds(stage_hw.back(), e.ids_bytes_decode_step) : 0;
  e.prefill_s = sum_p + (m - 1) * max_p;
  const double pace = m * max_g, round_trip = sum_g + back;
  e.decode_s = (n - 1) * std::max(pace, round_trip);
  e.decode_bottleneck = round_trip > pace ? "round trip"
                        : slowest >= 0    ? "stage " + std::to_string(slowest)
                                          : "link " + std::to_string(-1 - slowest);
  e.total_s = e.prefill_s + e.decode_s;
  e.prefill_tok_s = m * bls * w.prompt_len / e.prefill_s;
  e.decode_tok_s = n > 1 ? m * bls * (n - 1) / e.decode_s : 0;
  e.total_tok_s = m * bls * n / e.total_s;
  double busy = 0;
  for (const StageEstimate& st : e.stages) busy += st.busy_s;
  e.bubble = std::max(0.0, 1 - busy / (m * e.total_s));
  return e;
}

}  // namespace h2oflex::policy
