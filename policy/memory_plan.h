// The engine's memory plan: the home tier of every weight tensor, KV cache and activation block,
// the workspaces the block schedule needs, and the bytes each tier must hold — computed before
// anything is allocated, so a policy over budget is refused with the estimate. The engine
// allocates exactly what this plan lists; the planner and the cost model ask the same function
// (through ModelFootprint), so a policy they choose is one the engine accepts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/run_policy.h"
#include "runtime/core/storage_format.h"
#include "runtime/core/tier_kind.h"

namespace h2oflex::policy {

// What the plan needs to know about a model: family-neutral sizes.
struct ModelFootprint {
  std::vector<uint64_t> tensor_bytes;  // every weight tensor, execution order
  // Each tensor's bytes with the layers' matrices packed in a format
  // (runtime/core/storage_format.h: its row's row_bytes), 0 for a tensor that stays plain
  // (models/weight_spec.h, compressible): one entry per format the weights may be packed to (q4_g64
  // is compress_weight's). A format absent is not offered (a checkpoint stored in its own blocks is
  // not repacked).
  struct PackedSizes {
    PackedFormat format;
    std::vector<uint64_t> bytes;
  };
  std::vector<PackedSizes> packed_bytes;
  // The sizes under format f, nullptr when not offered.
  const std::vector<uint64_t>* packed(PackedFormat f) const;
  std::vector<std::vector<size_t>> unit_tensors;  // per unit (embedding, layers, head)
  int64_t layers = 0, hidden = 0, vocab = 0;
  int64_t query_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t scratch_elems_per_row = 0;  // the layers' f32 working buffers per hidden row
  // A digest of tensor_bytes and unit_tensors (seal_footprint sets it; 0 = not yet computed).
  // The planner evaluates many plans of one model and reuses weight placements by it.
  uint64_t fingerprint = 0;
};

// Sets `f.fingerprint` from its contents; call it after filling a footprint.
void seal_footprint(ModelFootprint& f);

// The run's shape.
struct PlanShape {
  int64_t prompt_len = 0;  // padded
  int64_t gen_len = 0;
  int64_t kv_slots = 0;  // per (sequence, layer, KV head)
  StorageFormat kv_format;
  bool separate_device = false;  // the device tier is not host memory the CPU computes on
  bool gpu = false;              // ... and it is a GPU's: the CUDA runtime's memory is planned
};

// Rounds allocations to the tiers' 4 KiB unit, as the tiers do.
uint64_t plan_round(uint64_t bytes);

// Where the weights go: the part of a plan that depends only on the model, the weight shares and
// the kind of device (the planner reuses it across batch shapes).
struct WeightPlacement {
  std::vector<TierKind> home;   // per tensor
  std::vector<uint64_t> bytes;  // per tensor, as stored (packed under Policy::weight_packing)
  // Per tensor: stored packed (Policy::weight_packing). The GEMM dequantizes such a weight piece by
  // piece where it runs (ops::linear), in its bounded operand scratch.
  std::vector<bool> compressed;
  std::vector<uint64_t> plain;  // per tensor, its plain bytes
  // One buffer of the double-buffered weight workspace, and each unit's tensors' offsets in it
  // (only staged tensors take room).
  uint64_t workspace = 0;
  std::vector<std::vector<uint64_t>> workspace_offset;
  uint64_t tier_bytes[kTierKinds] = {0, 0, 0};  // homes and the two workspace buffers
};

struct MemoryPlan {
  std::shared_ptr<const WeightPlacement> weights;
  std::vector<TierKind> kv_home;   // per layer
  std::vector<TierKind> act_home;  // per GPU batch
  uint64_t kv_bytes = 0;           // K (or V) of one (layer, GPU batch), rounded
  uint64_t kv_log_bytes = 0;       // the write-back log after each logged home's K and V
  uint64_t meta_bytes = 0;         // positions (or scores) of one (layer, GPU batch), rounded
  uint64_t act_bytes = 0;          // hidden states of one GPU batch, rounded
  bool kv_workspace = false;       // some layer's KV is loaded into workspaces (2 x K and V)
  TierKind kv_workspace_tier = TierKind::Device;
  bool act_workspace = false;              // some batch's activations are staged into the device
  uint64_t bytes[kTierKinds] = {0, 0, 0};  // per tier (TierKind order)
  // Device bytes allocated outside the device tier, included in bytes[Device]: the ops' working
  // buffers (ops/scratch.h) and, on a CPU, the GEMMs' operand buffers (cpu_memory_reserve.h);
  // on a GPU the stream-ordered pool the ops' temporaries come from and the context with the
  // cuBLAS workspace (gpu_memory_reserve.h).
  uint64_t op_scratch_bytes = 0;
  // Host bytes of the pinned buffer a GPU's host-produced weights are uploaded through.
  uint64_t weight_upload_bytes = 0;
  uint64_t gpu_pool_bytes = 0;
  uint64_t gpu_fixed_bytes = 0;
  // What a GPU's device tier is charged up front besides its own allocations, so that its budget
  // (device_mem) covers the whole card.
  uint64_t device_bytes_outside_tier() const {
    return op_scratch_bytes + (gpu ? gpu_pool_bytes + gpu_fixed_bytes : 0);
  }

  bool cpu_cache_compute = false;
  bool separate_device = false;
  bool gpu = false;
  // Data in `home` is copied into a device workspace before the device computes on it.
  bool staged(TierKind home) const {
    return home == TierKind::Disk || (separate_device && home == TierKind::Host);
  }
  // A layer's KV computed on where it lives (no workspace copy).
  bool kv_in_place(int layer) const;
  // A layer's KV lives on disk and is written back through a log (engine/kv_log.h): where the
  // workspace the log is read into and written from is memory the host addresses.
  bool kv_logged(int layer) const;
  // Where a layer's slot positions and scores live: with the attention that reads them.
  TierKind meta_tier(TierKind kv_home) const;
  uint64_t on(TierKind t) const { return bytes[static_cast<int>(t)]; }
};

// The log's room of one disk home: enough full entries (a decode step's K and V records of every
// (sequence, head), rounded to 4096 bytes, the largest direct-I/O block) for the longest stretch
// KvLog's compaction rule lets the log grow — until the extra bytes loads read reach the bytes of
// a compaction, r k (k - 1) / 2 >= W at capacity — and at most one entry per decode step.
uint64_t kv_log_bytes(uint64_t records, uint64_t slots, uint64_t record_bytes,
                      int64_t decode_steps);

MemoryPlan plan_memory(const ModelFootprint& model, const Policy& p, const PlanShape& shape);

// Throws InputError naming every tier whose planned bytes exceed its budget (0 = unlimited).
void check_plan_fits(const MemoryPlan& plan, const Policy& p, const HardwareLimits& limits);

}  // namespace h2oflex::policy
