// The block-schedule pipeline (FlexGen's zig-zag order) over memory tiers, for any DecoderModel.
//
// A block of gpu_batch_size × num_gpu_batches sequences shares one pass of the weights per
// layer. The parts, each in its own file: the memory plan (policy/memory_plan: homes, workspaces,
// the budget refusal), the tiers (tier_set), the weights (weight_stream: homes over WeightStore,
// double-buffered prefetch), the KV homes (kv_home: load, store of changed slots), the
// activations (activations), the loop (schedule), and the statistics (run_stats). This file
// wires them and dispatches a visit's compute to the model.
//
// On the CPU (PipelineDevice::Cpu) host-resident data is computed on in place and only disk-
// resident data is staged through the workspaces. On a GPU (Cuda, and its CPU stand-in
// CpuIsolated) the device computes only on device memory: host- and disk-resident weights and
// activations are staged, a KV cache off the device is either loaded into a device workspace
// or, with cpu_cache_compute, attended to on the host (only q, k, v and the attention output
// cross), and the slot positions and scores live with the attention that reads them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_layout.h"
#include "engine/pipeline_device.h"
#include "engine/run_stats.h"
#include "offload/io/io_engine.h"
#include "policy/memory_plan.h"
#include "policy/run_policy.h"
#include "runtime/dist/device_link.h"
#include "runtime/dist/transport.h"

namespace h2oflex {

// Where a run is, for a progress display (the engine prints nothing itself).
struct PipelineProgress {
  bool prefill = true;
  int done = 0, total = 0;  // prefill: units; decode: steps
  double elapsed_s = 0;
  double tokens_per_s = 0;  // decode only
};
using ProgressFn = std::function<void(const PipelineProgress&)>;

struct PipelineSpec {
  PipelineDevice device = PipelineDevice::Cpu;
  std::shared_ptr<const DecoderModel> model;
  WeightProducer producer;
  PartialWeightProducer partial_producer;  // optional: faster layout writing for dummy weights
  PackedWeightProducer packed_producer;    // optional: a GGUF tensor's blocks as stored
  std::string weights_key;  // identifies the weights; disk-resident weights live in a layout
                            // under disk_path keyed by it, reused by later runs
  policy::Policy policy;
  policy::HardwareLimits limits;  // 0 budget = unlimited; disk_path needed when disk is used
  GenerationSettings gen;         // gen_len, compute, kv_dtype, eviction, sampling
  std::vector<std::vector<int32_t>> prompts;  // exactly policy.block_size() of them
  int projected_steps = 0;                    // > 0: time this many decode steps and extrapolate
  ProgressFn on_progress;                     // optional
  std::shared_ptr<IoFaultHook>
      io_fault_hook;  // optional: sees every disk I/O (tests inject faults)
  // How a KV cache on disk is written back (tests): 0 = through the log, compacted by its rule;
  // N > 0 = through the log, compacted every N steps; -1 = scattered writes in place, no log.
  int kv_log_compact_every = 0;
  // Pipeline stages (runtime/dist): with a transport of S > 1 processes, this process runs stage
  // rank() of plan_stages — only its units' weights and its layers' KV cache are placed, hidden
  // states come from the previous stage and go to the next, and the last stage sends every
  // block's chosen token ids to all the others, so each one's result holds the tokens. The
  // block goes through in policy.micro_blocks parts, so that several stages compute at once.
  // Every process runs the same prompts, gen settings and block shape (checked: a mismatch is
  // an InputError); placements may differ. Null (or one process): the whole model.
  Transport* transport = nullptr;
  // Between stages on GPUs: hidden states go device to device through this link when given
  // (NCCL, runtime/dist/job_device_link.h), else device -> host -> transport.
  DeviceLink* device_link = nullptr;
};

// The plan run_pipeline would allocate for `spec` (nothing is allocated): this process's stage's.
policy::MemoryPlan plan_pipeline(const PipelineSpec& spec);

PipelineResult run_pipeline(const PipelineSpec& spec);

}  // namespace h2oflex
