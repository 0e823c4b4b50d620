// What a pipeline run reports: tokens, phase times, bytes moved, peaks, and how busy each
// resource was per phase.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "offload/transfer/transfer_engine.h"

namespace h2oflex {

struct StageBusy {
  double compute = 0, weight_load = 0, cache_load = 0, cache_store = 0;
};

// Seconds of a phase by unit kind. Wall: from the end of one unit to the end of the next, its
// weight wait included; compute: the units' compute alone. A decoder layer's share over the
// layer count gives the per-layer time, from which a run on a truncated stack of layers tells
// the time of the full one.
struct ByUnitKind {
  double embedding = 0, layers = 0, head = 0;
  double& of(int unit, int head_unit) {
    return unit == 0 ? embedding : unit == head_unit ? head : layers;
  }
};

struct PipelineResult {
  std::vector<std::vector<int32_t>> tokens;
  double prefill_s = 0, decode_s = 0;
  bool projected = false;
  int decode_steps_run = 0;
  // Pipeline stages: the parts this stage's block went through the stages in (policy
  // micro_blocks, resolved); 1 in a single process.
  int micro_blocks = 1;
  // Pipeline stages: the bytes this stage sent to the others per phase ("prefill", "decode"):
  // hidden states to the next stage, and from the last stage the token ids to every other.
  std::map<std::string, uint64_t> stage_sent_bytes;
  std::map<std::string, uint64_t> peak_bytes;     // per tier name
  std::map<std::string, uint64_t> planned_bytes;  // the up-front estimate per tier
  // On a GPU, what cudaMemGetInfo reported in use (total - free): before the run allocated
  // anything, and the most seen after any step; 0 when not measured (no GPU).
  uint64_t gpu_used_at_start = 0, gpu_used_peak = 0, gpu_total = 0;
  std::vector<TransferRecord> bytes_moved;
  std::map<std::string, StageBusy> stage_busy_s;     // "prefill", "decode"
  std::map<std::string, ByUnitKind> unit_wall_s;     // "prefill", "decode"
  std::map<std::string, ByUnitKind> unit_compute_s;  // "prefill", "decode"
  int kv_log_compactions = 0;  // compactions of the KV caches on disk (kv_log.h)
  KeptSets kept;               // when spec.gen.capture_kept: the same order as the in-RAM path
  bool stopped = false;        // spec.gen.stop_requested ended the run between decode steps
};

// Busy seconds so far of compute and of each queue; the difference of two is a phase's.
StageBusy busy_now(const TransferEngine& transfers, double compute_s);
StageBusy busy_between(const StageBusy& before, const StageBusy& after);

}  // namespace h2oflex
