// FlexGen's block schedule over abstract units. One step (the prefill, or one decode step) walks
// a stage's units in order; every unit's weights are loaded once per block, the next unit's
// while this one computes, and each decoder layer is visited once per GPU batch, the next
// visit's KV loading into the other buffer while this visit computes. That load is queued before
// this visit waits for its own, so the load queue starts it as soon as this one's requests are all
// at the device (queued after the wait, it started only once this thread had woken and queued it:
// about a millisecond a visit on a 2-core virtual machine, 5% of a disk-bound decode). In decode,
// the next decode step's first KV load is queued before this step's last layer visit computes, so
// it overlaps the units after the last layer (the head), the next step's units before the first
// (the embedding) and a pipeline stage's wait for its input; the next step's second load is queued
// as soon as the last visit has computed in its buffer, so it follows the first without waiting for
// the head and the embedding (in a disk-bound decode they left the disk idle for about 20 ms a
// step). With `overlap` off every copy finishes before the next compute starts.
#pragma once

#include <optional>
#include <vector>

#include "offload/transfer/transfer_engine.h"

namespace h2oflex {

// What the schedule drives; the pipeline implements it.
class ScheduleHooks {
 public:
  virtual ~ScheduleHooks() = default;
  virtual std::vector<TransferHandle> prefetch_weights(int unit) = 0;
  // KV of (layer unit, batch) into buffer `buf`; empty when the cache is computed in place.
  virtual std::vector<TransferHandle> load_kv(int unit, int batch, int buf) = 0;
  // Blocks until the KV load of visit (unit, batch) is done (and clears `handles`).
  virtual void wait_kv_load(int unit, int batch, std::vector<TransferHandle>& handles);
  virtual void compute(int unit, int batch, int buf) = 0;
  virtual void wait_kv_stores() = 0;
  virtual void unit_done(int unit) = 0;
};

// A stage owns units [first_unit, last_unit]; units [first_layer, last_layer] among them are
// decoder layers (they have a KV cache).
struct StageUnits {
  int first_unit = 0, last_unit = 0;
  int first_layer = 1, last_layer = 0;
  bool is_layer(int unit) const { return unit >= first_layer && unit <= last_layer; }
};

struct StepShape {
  StageUnits units;
  // The GPU batches this step visits: [first_batch, first_batch + batches) of the block (a
  // pipeline stage visits its block one micro-block at a time, engine/pipeline.cc).
  int first_batch = 0;
  int batches = 1;
  bool prefill = true;
  bool overlap = true;
  // The first GPU batch of the step this stage runs next, if this step and that one are decode
  // steps (its first layer visit's KV can be loaded during this step).
  std::optional<int> next_decode_first_batch;
};

// The KV loads one step queued for the next step's first layer visit (unit, batch, buf) and, once
// its own last visit had computed in the buffer the next step's second visit uses, for that one.
struct KvPrefetch {
  int unit = -1, batch = -1, buf = -1;
  std::vector<TransferHandle> handles;
  std::vector<TransferHandle> second;  // the next step's second layer visit's, if queued
  bool empty() const { return handles.empty(); }
};

// Buffer of visit (unit, batch), batch counted from the step's first: consecutive visits
// alternate.
inline int visit_buffer(int unit, int batch, int batches) {
  return (unit * batches + batch) % 2;
}

// Runs one step. `carried` is what the previous step returned: the load of this step's first
// layer visit, already in flight. Returns the load queued for the next step's first layer visit
// (empty if none was: no next decode step, no overlap, or that visit's buffer is the one this
// step's last visit computes in). A caller that does not run that step must wait for it.
KvPrefetch run_step(ScheduleHooks& hooks, const StepShape& shape, KvPrefetch carried = {});

}  // namespace h2oflex
