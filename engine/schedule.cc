#include "engine/schedule.h"

namespace h2oflex {

namespace {

void wait_all(std::vector<TransferHandle>& handles) {
  for (auto& h : handles) h.wait();
  handles.clear();
}

}  // namespace

void run_step(ScheduleHooks& hooks, const StepShape& s) {
  const StageUnits& u = s.units;
  const bool decode = !s.prefill;
  std::vector<TransferHandle> wload = hooks.prefetch_weights(u.first_unit);
  std::vector<TransferHandle> cload;
  for (int unit = u.first_unit; unit <= u.last_unit; ++unit) {
    // Once per block: the next unit's weights go to the other workspace buffer.
    std::vector<TransferHandle> wnext;
    if (s.overlap && unit < u.last_unit) wnext = hooks.prefetch_weights(unit + 1);
    wait_all(wload);
    for (int i = 0; i < s.batches; ++i) {
      const int batch = s.first_batch + i;
      const int buf = visit_buffer(unit, i, s.batches);
      if (decode && u.is_layer(unit) && cload.empty()) cload = hooks.load_kv(unit, batch, buf);
      wait_all(cload);
      const int next_unit = i + 1 < s.batches ? unit : unit + 1;
      const int next_batch = s.first_batch + (i + 1 < s.batches ? i + 1 : 0);
      // The next visit's KV goes to the other buffer while this one computes: queued before the
      // compute starts (behind that buffer's pending store), so the copy overlaps all of it.
      if (s.overlap && decode && next_unit <= u.last_unit && u.is_layer(next_unit)) {
        cload = hooks.load_kv(next_unit, next_batch, 1 - buf);
      }
      hooks.compute(unit, batch, buf);
      if (!s.overlap) hooks.wait_kv_stores();
    }
    if (!s.overlap && unit < u.last_unit) wnext = hooks.prefetch_weights(unit + 1);
    hooks.unit_done(unit);
    wload = std::move(wnext);
  }
  hooks.wait_kv_stores();
}

}  // namespace h2oflex
