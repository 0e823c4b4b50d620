// Policy search: the batch shape, the placements and attention delegation that maximize the
// cost model's generation throughput (bls*n / (T_prefill + T_decode)) within the memory of
// every tier.
//
// As FlexGen's search: for each gpu_batch_size in 1, 2, 4, 8, 16, 32, 48, 64, 96, 128, ...
// the largest feasible num_gpu_batches is found by doubling then bisection; then a ladder of
// num_gpu_batches up to it is evaluated. For each batch shape, placements come from a grid
// (weights and cache in steps of `placement_step` percent, activations whole on one tier) with
// cpu_cache_compute on and off; the best point is then refined by coordinate steps of 10, 5,
// 2 and 1 percent. (FlexGen solves an LP per batch shape instead of the grid.)
//
// With allow_compression, a second pass does the same over the storage formats: weights plain,
// q8_0 or q4_g64 (compress_weight) x KV rows plain, q8_0 or q4_g64 (compress_cache), q8_0 only
// on the CPU (search.cc, compression_choices, says why not q4_0 / q4_1), each costed by its
// bytes (the format table's row_bytes, through the footprint) and its unpacking; its
// refinement also switches formats, and the faster of the two results wins: never slower than
// the search without compression. A model stored in its own blocks (a GGUF file under
// weight_format: stored) keeps them: only the KV's format is searched. A batch shape
// whose computation alone (throughput_bound) cannot beat the best so far is skipped without
// trying its placements.
#pragma once

#include <vector>

#include "policy/cost_model.h"

namespace h2oflex::policy {

struct SearchOptions {
  double placement_step = 20;        // percent, coarse grid (refined down to 1)
  std::vector<int> gpu_batch_sizes;  // empty: 1, 2, 4, 8, 16, 32, 48, 64, 96, 128, ... 8192
  int max_num_gpu_batches = 1 << 14;
  bool allow_disk = true;  // may weights/cache/activations use the disk tier
  DecodeContext decode_context = DecodeContext::Mean;
  // A larger batch or another placement replaces the best one only when predicted faster by
  // more than this fraction: where throughput has saturated (compute-bound), growing the block
  // buys nothing but memory and latency.
  double min_gain = 0.005;
  // May the policy pack weights and/or the KV cache (compress_weight, compress_cache,
  // weight_format / cache_format q8_0)? Off by default: packed values change a run's outputs,
  // so `policy: auto` does not choose them on its own.
  bool allow_compression = false;
};

struct SearchResult {
  bool found = false;
  Policy policy;
  CostEstimate estimate;
  TierBytes capacity;   // what the search had to fit in, per tier
  long evaluated = 0;   // policies whose throughput was estimated
  long pruned = 0;      // (batch shape, compression) pairs skipped by throughput_bound
  double seconds = 0;   // wall time of the search
  std::string why_not;  // when !found: the smallest policy's memory violation
};

// Capacity per tier: hw size * hw.usable_fraction, lowered to `limits` where those are set.
TierBytes search_capacity(const HardwareProfile& hw, const HardwareLimits& limits);

SearchResult search_policy(const ModelShape& model, const HardwareProfile& hw, const Workload& w,
                           const HardwareLimits& limits = {}, const SearchOptions& opt = {});

}  // namespace h2oflex::policy
