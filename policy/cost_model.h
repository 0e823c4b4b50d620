// FlexGen's analytic cost model (per-layer time of prefill and decode as a function of the
// placement, the batch shape and the hardware constants; peak bytes per tier), extended with:
//  - KV eviction (H2O, StreamingLLM, TOVA): the KV terms use the budget B instead of s + n/2
//    (memory: B instead of s + n), plus the score bookkeeping and eviction of a bounded cache;
//  - cpu_cache_compute on/off: with it, decode attention over host/disk-resident KV runs at the
//    host rate and only q / the output cross the link; without it, that KV crosses to the device
//    every step and attention runs there;
//  - the CPU-only hierarchy (HardwareProfile::compute_device == Cpu): the device is a RAM arena,
//    host<->device copies are memcpy done by the same cores that compute (so they do not
//    overlap with compute), disk I/O still overlaps except a disk-resident KV cache's in
//    decode, and its small scattered write-backs cost per request;
//  - the device-memory bound of small-batch decode GEMMs and the LM head (see cost_model.cc);
//  - packed formats (FlexGen's 4-bit compress_weight / compress_cache, and weight_format /
//    cache_format q8_0 ...): packed bytes are what is stored and moved, and (de)quantizing
//    costs compute time at the profile's rates (HardwareProfile::dequant_rate_device /
//    dequant_rate_host; see cost_model.cc).
// Throughputs follow FlexGen's definitions: prefill = bls*s / T_prefill, decode =
// bls*(n-1) / T_decode, total ("generation throughput") = bls*n / (T_prefill + T_decode).
#pragma once

#include <cstdint>
#include <string>

#include "policy/hardware.h"
#include "policy/kv_policy.h"
#include "policy/memory_plan.h"
#include "policy/run_policy.h"
#include "runtime/core/dtype.h"

namespace h2oflex::policy {

// What the cost model needs to know about a decoder-only model (policy/ does not know OPT).
struct ModelShape {
  std::string name;
  int64_t layers = 0, hidden = 0, heads = 0;
  int64_t kv_heads = 0, head_dim = 0;  // kv_heads < heads: grouped-query attention
  int64_t vocab = 50272;
  double weight_bytes = 2;  // bytes per stored weight element (fp16/bf16)
  double kv_bytes = 2;      // bytes per stored K or V element
  double act_bytes = 2;     // bytes per activation element moved or buffered
  // Parameter counts from the model's own tensors (engine's model_shape_for), so every family's
  // shape enters the formulas without a per-family formula here.
  double layer_param_count = 0;    // one decoder layer, biases and norms included
  double layer_matrix_params = 0;  // the part of it in GEMM matrices
  double other_param_count = 0;    // embeddings, final norm, LM head (a tied head counted once)
  double head_param_count = 0;     // the LM head matrix (vocab x hidden)
  // Every tensor's stored bytes and the units (built from the model by the engine's
  // model_footprint, at weight_bytes per matrix element): what memory estimates are made of.
  ModelFootprint footprint;

  double layer_params() const { return layer_param_count; }
  double layer_weight_bytes() const { return layer_params() * weight_bytes; }
  // One layer's weight bytes as stored and moved with its matrices packed in `packing`
  // (Policy::weight_packing): its compressible matrices (models/weight_spec.h) at their packed
  // size, the footprint's packed_bytes (the format row's row_bytes,
  // runtime/core/storage_format.h), and the rest as layer_weight_bytes counts it.
  double layer_stored_weight_bytes(PackedFormat packing) const;
  // Bytes one layer's unpacking produces with its matrices in `packing` (its packed matrices at
  // their plain size); 0 for None.
  double layer_decoded_weight_bytes(PackedFormat packing) const;
  // The KV cache's value type (kv_bytes wide).
  DType kv_dtype() const { return kv_bytes >= 4 ? DType::F32 : DType::BF16; }
  // One token's K and V in one layer as stored: a row of head_dim values per KV head for each
  // of K and V, in kv_storage_format(kv_dtype(), the policy's kv_packing()).
  double kv_token_bytes(PackedFormat kv_packing) const;
  double embedding_params() const { return other_param_count; }
  double total_weight_bytes() const;
  // GEMM FLOPs of one decoder layer for one token (2 * matrix parameters; FlexGen's
  // 8*h1^2 + 4*h1*h2 for OPT).
  double layer_gemm_flops_per_token() const { return 2 * layer_matrix_params; }
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }
};

struct Workload {
  int prompt_len = 512;
  int gen_len = 32;
  KvPolicy kv;
};

// Which decode context the KV terms use. Mean: s + n/2 (FlexGen's model, the average over the
// run). FirstStep: s + 1 — how FlexGen's "fewer_batch"/cut-gen-len runs measured decode (they
// time the first decode steps and extrapolate), so their published numbers reflect it.
enum class DecodeContext { Mean, FirstStep };

struct TierBytes {
  double device = 0, host = 0, disk = 0;
};

// Per-layer link and compute times of one phase, seconds (FlexGen's ctog/gtoc/dtoc/ctod/comp).
struct PhaseTerms {
  double ctog = 0, gtoc = 0, dtoc = 0, ctod = 0, comp = 0;
  double dequant = 0;      // the part of comp that (de)quantizes (compress_weight / _cache)
  double unhidden = 0;     // the part of dtoc + ctod that the schedule cannot overlap
  double per_layer = 0;    // the combination of the above that the schedule achieves
  std::string bottleneck;  // the largest term's name
};

struct CostEstimate {
  PhaseTerms prefill, decode;
  double prefill_s = 0, decode_s = 0, total_s = 0;
  double prefill_tok_s = 0, decode_tok_s = 0, total_tok_s = 0;
  TierBytes peak_prefill, peak_decode, peak;  // peak = max of the two phases, per tier
  int decode_kv_tokens = 0;  // KV tokens per sequence that a mean decode step attends to
  int kv_slots = 0;          // KV slots allocated per (sequence, layer)
};

CostEstimate estimate_cost(const ModelShape& model, const HardwareProfile& hw, const Policy& p,
                           const Workload& w, DecodeContext ctx = DecodeContext::Mean);

// An upper bound on estimate_cost(...).total_tok_s over every placement (weights, cache and
// activation percentages, cpu_cache_compute) of p's batch shape, compression and overlap: the
// time of the computation alone, at the faster of device and host attention and
// dequantization, with no link time. The planner skips a batch shape's placements when even
// this cannot beat its best.
double throughput_bound(const ModelShape& model, const HardwareProfile& hw, const Policy& p,
                        const Workload& w, DecodeContext ctx = DecodeContext::Mean);

// Bytes per tier the engine allocates for the run: the engine's own memory plan (plan_memory),
// so a policy the planner accepts is one the engine accepts. The engine allocates everything
// up front, so prefill, decode and peak are the same. `separate_device`: the compute device is a
// GPU (its memory is not host memory), which stages host data and holds the layers' buffers.
struct MemoryEstimate {
  TierBytes prefill, decode, peak;
};
MemoryEstimate estimate_memory(const ModelShape& model, const Policy& p, const Workload& w,
                               bool separate_device);
// estimate_cost with `memory` = estimate_memory(model, p, w, separate device) already at hand
// (the planner has computed it to check the budgets).
CostEstimate estimate_cost(const ModelShape& model, const HardwareProfile& hw, const Policy& p,
                           const Workload& w, DecodeContext ctx, const MemoryEstimate& memory);
// The plan's inputs for a workload (KV slots from the resolved rule, KV at kv_bytes, compressed
// under p.compress_cache).
PlanShape plan_shape(const ModelShape& model, const Policy& p, const Workload& w,
                     bool separate_device);

// Tier capacities to check a peak against.
TierBytes capacities(const HardwareLimits& limits);  // 0 in limits = unlimited
TierBytes capacities(const HardwareProfile& hw, double fraction);

// Whether `peak` fits `cap` on every tier (cap 0 = unlimited): memory_violation(...).empty(),
// without building the message.
bool fits_within(const TierBytes& peak, const TierBytes& cap);

// "" when `peak` fits `cap` on every tier (cap 0 = unlimited), else a message naming the tier,
// the estimate and the budget, e.g. "host: estimated peak 9.31 GiB exceeds budget 8.00 GiB".
std::string memory_violation(const TierBytes& peak, const TierBytes& cap);

// Throws InputError (with the estimate in the message) when the policy cannot run within the
// budgets: a peak over a budget, or a tier that cannot hold one layer's working set.
void check_fits(const ModelShape& model, const Policy& p, const Workload& w,
                const HardwareLimits& limits, bool separate_device);

}  // namespace h2oflex::policy
