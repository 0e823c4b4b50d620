// The block-schedule pipeline (FlexGen's zig-zag order) over memory tiers.
//
// A block of gpu_batch_size × num_gpu_batches sequences shares one pass of the weights per layer.
// For each step, for each layer unit (input embedding, decoder layers, output head), for each GPU
// batch: prefetch the next unit's weights (once per block) and the next batch's KV slots on their
// own queues, compute, then store only what changed back to the KV home tier — all overlapped
// with compute when `overlap` is on. Weights, KV and activations stay in their home tiers.
//
// On the CPU (PipelineDevice::Cpu) host-resident data is computed on in place and only disk-
// resident data is staged through double-buffered workspaces in the device arena. On a GPU
// (Cuda, and its CPU stand-in CpuIsolated) the device computes only on device memory: host- and
// disk-resident weights and activations are staged into device workspaces (disk data through
// the transfer engine's pinned bounce buffers, host data straight from pinned memory), a KV
// cache off the device is either loaded into a device workspace or, with cpu_cache_compute,
// attended to on the host (only q, k, v and the attention output cross), and the slot
// positions and scores live with the attention that reads them. Each transfer queue copies on
// its own CUDA stream; the compute stream is synchronized once per layer visit, before the
// visit's changed KV slots are stored.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/opt/opt_model.h"
#include "offload/transfer/transfer_engine.h"
#include "policy/kv_policy.h"
#include "policy/run_policy.h"
#include "engine/generator.h"
#include "engine/model_layout.h"

namespace h2oflex {

// What computes, and what the device tier is.
enum class PipelineDevice {
  Cpu,          // the CPU computes; the device tier is a RAM arena it computes on in place
  CpuIsolated,  // the same arena, but treated like a GPU's memory: every byte into or out of it
                // is an explicit copy (weights and activations staged, KV metadata on the
                // device, delegated attention copies q/k/v): the GPU data path, testable on a CPU
  Cuda,         // the GPU computes; the device tier is GPU memory (needs a CUDA build)
};

// "cpu", "cpu-isolated", "cuda".
const char* pipeline_device_name(PipelineDevice d);

struct PipelineSpec {
  PipelineDevice device = PipelineDevice::Cpu;
  OptConfig cfg;
  WeightProducer producer;
  PartialWeightProducer partial_producer;  // optional: faster layout writing for dummy weights
  std::string weights_key;  // identifies the weights; disk-resident weights live in a layout
                            // under disk_path keyed by it, reused by later runs
  policy::Policy policy;
  policy::HardwareLimits limits;  // 0 budget = unlimited; disk_path needed when disk is used
  GenerateOptions gen;            // gen_len, compute, kv_dtype, eviction, sampling
  std::vector<std::vector<int32_t>> prompts;  // exactly policy.block_size() of them
  int projected_steps = 0;                    // > 0: time this many decode steps and extrapolate
  bool progress = false;                      // progress line on stderr
};

struct StageBusy {
  double compute = 0, weight_load = 0, cache_load = 0, cache_store = 0;
};

struct PipelineResult {
  std::vector<std::vector<int32_t>> tokens;
  double prefill_s = 0, decode_s = 0;
  bool projected = false;
  int decode_steps_run = 0;
  std::map<std::string, uint64_t> peak_bytes;     // per tier name
  std::map<std::string, uint64_t> planned_bytes;  // the up-front estimate per tier
  std::vector<TransferRecord> bytes_moved;
  std::map<std::string, StageBusy> stage_busy_s;  // "prefill", "decode"
  KeptSets kept;  // when spec.gen.capture_kept: the same order as the in-RAM path
};

PipelineResult run_pipeline(const PipelineSpec& spec);

}  // namespace h2oflex
