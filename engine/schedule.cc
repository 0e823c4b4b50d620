#include "engine/schedule.h"

#include "runtime/core/error.h"

namespace h2oflex {

namespace {

void wait_all(std::vector<TransferHandle>& handles) {
  for (auto& h : handles) h.wait();
  handles.clear();
}

}  // namespace

void ScheduleHooks::wait_kv_load(int, int, std::vector<TransferHandle>& handles) {
  wait_all(handles);
}

KvPrefetch run_step(ScheduleHooks& hooks, const StepShape& s, KvPrefetch carried) {
  const StageUnits& u = s.units;
  const bool decode = !s.prefill;
  std::vector<TransferHandle> cload;
  H2OFLEX_CHECK(carried.second.empty() || !carried.empty(),
                "a second KV load carried without the first visit's");
  if (!carried.empty()) {
    H2OFLEX_CHECK(decode && carried.unit == u.first_layer && carried.batch == s.first_batch &&
                      carried.buf == visit_buffer(u.first_layer, 0, s.batches),
                  "a KV load carried into a step that does not start with its visit");
    cload = std::move(carried.handles);
  }
  std::vector<TransferHandle> carried_second = std::move(carried.second);
  KvPrefetch next;
  std::vector<TransferHandle> wload = hooks.prefetch_weights(u.first_unit);
  for (int unit = u.first_unit; unit <= u.last_unit; ++unit) {
    // Once per block: the next unit's weights go to the other workspace buffer.
    std::vector<TransferHandle> wnext;
    if (s.overlap && unit < u.last_unit) wnext = hooks.prefetch_weights(unit + 1);
    wait_all(wload);
    for (int i = 0; i < s.batches; ++i) {
      const int batch = s.first_batch + i;
      const int buf = visit_buffer(unit, i, s.batches);
      const bool layer = u.is_layer(unit);
      // Outside a layer, a load already queued is the next visit's (carried from the last step).
      const bool next_queued = !layer && !cload.empty();
      if (layer && decode && cload.empty()) cload = hooks.load_kv(unit, batch, buf);
      const int next_unit = i + 1 < s.batches ? unit : unit + 1;
      const int next_batch = s.first_batch + (i + 1 < s.batches ? i + 1 : 0);
      // The next visit's KV goes to the other buffer while this one computes: queued before this
      // visit's own load is waited for (behind that buffer's pending store, which the visit before
      // queued), so the copy follows this one's without a gap and overlaps all of this compute.
      std::vector<TransferHandle> cnext;
      if (s.overlap && decode && next_unit <= u.last_unit && u.is_layer(next_unit)) {
        if (layer && !carried_second.empty()) {  // the step's first layer visit
          cnext = std::move(carried_second);
        } else if (!next_queued) {
          cnext = hooks.load_kv(next_unit, next_batch, 1 - buf);
        }
      } else if (s.overlap && decode && unit == u.last_layer && i + 1 == s.batches &&
                 s.next_decode_first_batch.has_value() &&
                 visit_buffer(u.first_layer, 0, s.batches) != buf) {
        next.unit = u.first_layer;
        next.batch = *s.next_decode_first_batch;
        next.buf = 1 - buf;
        next.handles = hooks.load_kv(next.unit, next.batch, next.buf);
      }
      if (layer) hooks.wait_kv_load(unit, batch, cload);
      hooks.compute(unit, batch, buf);
      if (!s.overlap) hooks.wait_kv_stores();
      if (!next.empty() && unit == u.last_layer && i + 1 == s.batches) {
        // The next step's second visit computes in the buffer this one just left.
        const bool more_batches = s.batches > 1;
        const int unit2 = more_batches ? u.first_layer : u.first_layer + 1;
        if (u.is_layer(unit2)) {
          H2OFLEX_CHECK(visit_buffer(unit2, more_batches ? 1 : 0, s.batches) == buf,
                        "the next step's second visit does not use the last visit's buffer");
          next.second = hooks.load_kv(unit2, next.batch + (more_batches ? 1 : 0), buf);
        }
      }
      if (!next_queued) cload = std::move(cnext);
    }
    if (!s.overlap && unit < u.last_unit) wnext = hooks.prefetch_weights(unit + 1);
    hooks.unit_done(unit);
    wload = std::move(wnext);
  }
  hooks.wait_kv_stores();
  return next;
}

}  // namespace h2oflex
