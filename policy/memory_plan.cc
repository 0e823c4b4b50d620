#include "policy/memory_plan.h"

#include <algorithm>
#include <deque>
#include <mutex>

#include "policy/home_tiers.h"
#include "runtime/core/cpu_memory_reserve.h"
#include "runtime/core/error.h"
#include "runtime/core/gpu_memory_reserve.h"

namespace h2oflex::policy {

uint64_t plan_round(uint64_t bytes) {
  return (bytes + 4095) / 4096 * 4096;
}

bool MemoryPlan::kv_in_place(int layer) const {
  const TierKind k = kv_home.at(static_cast<size_t>(layer));
  return k == TierKind::Device || (k == TierKind::Host && cpu_cache_compute);
}

bool MemoryPlan::kv_logged(int layer) const {
  return kv_home.at(static_cast<size_t>(layer)) == TierKind::Disk &&
         (kv_workspace_tier == TierKind::Host || !separate_device);
}

uint64_t kv_log_bytes(uint64_t records, uint64_t slots, uint64_t record_bytes,
                      int64_t decode_steps) {
  constexpr uint64_t kBlock = 4096;
  if (decode_steps <= 0 || records == 0) return 0;
  const uint64_t entry = (2 * records * record_bytes + kBlock - 1) / kBlock * kBlock;
  // The most a compaction writes: K and V of every slot (at capacity the records' parts are
  // contiguous, so their rounding is the region's).
  const uint64_t live = 2 * ((records * slots * record_bytes + kBlock - 1) / kBlock * kBlock);
  uint64_t k = 1;
  while (entry * k * (k - 1) / 2 < live) ++k;
  return entry * std::min<uint64_t>(k, static_cast<uint64_t>(decode_steps));
}

TierKind MemoryPlan::meta_tier(TierKind kv) const {
  if (kv == TierKind::Device) return TierKind::Device;
  if (cpu_cache_compute) return TierKind::Host;  // the host computes this attention
  // The device computes it on a workspace copy of the slots; on the CPU-only hierarchy the
  // host memory is equally close, and keeps the arena free for weights.
  return separate_device ? TierKind::Device : TierKind::Host;
}

namespace {

void add(MemoryPlan& plan, TierKind k, uint64_t n) {
  plan.bytes[static_cast<int>(k)] += n;
}

WeightPlacement place_weights(const ModelFootprint& m, const Policy& p, bool separate) {
  WeightPlacement w;
  MemoryPlan staging_rule;  // only for staged()
  staging_rule.separate_device = separate;
  // Home tiers by FlexGen's cumulative rule over the tensors (as stored) in execution order.
  const size_t n = m.tensor_bytes.size();
  w.plain = m.tensor_bytes;
  w.bytes = m.tensor_bytes;
  w.compressed.assign(n, false);
  const PackedFormat packing = p.weight_packing();
  const std::vector<uint64_t>* packed = m.packed(packing);
  H2OFLEX_CHECK(
      packing == PackedFormat::None || packed != nullptr || packing == PackedFormat::Q4G64,
      "footprint: no sizes for weights packed as ", packed_format_row(packing).name);
  H2OFLEX_CHECK(packed == nullptr || packed->size() == n,
                "footprint: ", packed ? packed->size() : 0, " packed sizes for ", n, " tensors");
  for (size_t i = 0; packed != nullptr && i < n; ++i) {
    if ((*packed)[i] == 0) continue;
    w.compressed[i] = true;
    w.bytes[i] = (*packed)[i];
  }
  w.home = assign_home_tiers(w.bytes, TierShares{p.w_gpu, p.w_cpu, p.w_disk()});
  for (size_t i = 0; i < w.bytes.size(); ++i) {
    w.tier_bytes[static_cast<int>(w.home[i])] += plan_round(w.bytes[i]);
  }
  // The workspace that holds one unit's staged weights (double-buffered).
  w.workspace_offset.assign(m.unit_tensors.size(), {});
  for (size_t u = 0; u < m.unit_tensors.size(); ++u) {
    uint64_t off = 0;
    for (size_t i : m.unit_tensors[u]) {
      w.workspace_offset[u].push_back(off);
      if (staging_rule.staged(w.home[i])) off += plan_round(w.bytes[i]);
    }
    w.workspace = std::max(w.workspace, off);
  }
  w.tier_bytes[static_cast<int>(TierKind::Device)] += 2 * w.workspace;
  return w;
}

// A 64-bit digest of everything a weight placement depends on in the footprint (FNV-1a over the
// tensor sizes and the unit lists).
uint64_t footprint_fingerprint(const ModelFootprint& m) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (uint64_t b : m.tensor_bytes) mix(b);
  mix(~uint64_t{1});
  for (const ModelFootprint::PackedSizes& s : m.packed_bytes) {
    mix(static_cast<uint64_t>(s.format));
    for (uint64_t b : s.bytes) mix(b);
  }
  for (const auto& unit : m.unit_tensors) {
    mix(~uint64_t{0});
    for (size_t i : unit) mix(i);
  }
  return h;
}

// The planner asks for thousands of plans of one model that differ only in batch shape and KV
// placement: the last few weight placements are kept, keyed by content (not by address).
std::shared_ptr<const WeightPlacement> weight_placement(const ModelFootprint& m, const Policy& p,
                                                        bool separate) {
  struct Kept {
    uint64_t fingerprint;
    double w_gpu, w_cpu;
    bool separate;
    PackedFormat packing;
    std::shared_ptr<const WeightPlacement> placement;
  };
  static std::mutex mu;
  static std::deque<Kept> kept;
  constexpr size_t kKept = 256;  // a search's whole placement grid
  const uint64_t fp = m.fingerprint != 0 ? m.fingerprint : footprint_fingerprint(m);
  std::lock_guard lock(mu);
  for (const Kept& k : kept) {
    if (k.fingerprint == fp && k.w_gpu == p.w_gpu && k.w_cpu == p.w_cpu && k.separate == separate &&
        k.packing == p.weight_packing()) {
      return k.placement;
    }
  }
  auto placement = std::make_shared<const WeightPlacement>(place_weights(m, p, separate));
  kept.push_front({fp, p.w_gpu, p.w_cpu, separate, p.weight_packing(), placement});
  if (kept.size() > kKept) kept.pop_back();
  return placement;
}

void plan_weights(MemoryPlan& plan, const ModelFootprint& m, const Policy& p) {
  plan.weights = weight_placement(m, p, plan.separate_device);
  for (int t = 0; t < kTierKinds; ++t) plan.bytes[t] += plan.weights->tier_bytes[t];
  // A GPU's weights produced on the host go up through one pinned buffer of the largest one's
  // size (WeightStoreSettings::pin_upload).
  if (plan.gpu) {
    uint64_t largest = 0;
    for (size_t i = 0; i < m.tensor_bytes.size(); ++i) {
      if (plan.weights->home[i] == TierKind::Device) {
        largest = std::max(largest, plan.weights->bytes[i]);
      }
    }
    plan.weight_upload_bytes = plan_round(largest);
    add(plan, TierKind::Host, plan.weight_upload_bytes);
  }
}

void plan_kv(MemoryPlan& plan, const ModelFootprint& m, const Policy& p, const PlanShape& s) {
  const uint64_t gbs = static_cast<uint64_t>(p.gpu_batch_size);
  const uint64_t ngb = static_cast<uint64_t>(p.num_gpu_batches);
  const uint64_t records = gbs * static_cast<uint64_t>(m.kv_heads * s.kv_slots);
  plan.kv_bytes = plan_round(records * s.kv_format.bytes(static_cast<uint64_t>(m.head_dim)));
  plan.meta_bytes = plan_round(records * 4);
  plan.kv_log_bytes =
      kv_log_bytes(gbs * static_cast<uint64_t>(m.kv_heads), static_cast<uint64_t>(s.kv_slots),
                   s.kv_format.bytes(static_cast<uint64_t>(m.head_dim)), s.gen_len - 1);
  // Each layer's cache goes to a tier by the cumulative rule over layers.
  const std::vector<uint64_t> per_layer(static_cast<size_t>(m.layers), 1);
  plan.kv_home = assign_home_tiers(per_layer, TierShares{p.cache_gpu, p.cache_cpu, p.cache_disk()});
  plan.kv_workspace_tier = p.cpu_cache_compute ? TierKind::Host : TierKind::Device;
  for (int64_t l = 0; l < m.layers; ++l) {
    const TierKind k = plan.kv_home[static_cast<size_t>(l)];
    const uint64_t log = plan.kv_logged(static_cast<int>(l)) ? plan.kv_log_bytes : 0;
    add(plan, k, (2 * plan.kv_bytes + log) * ngb);
    add(plan, plan.meta_tier(k), 2 * plan.meta_bytes * ngb);
    plan.kv_workspace = plan.kv_workspace || !plan.kv_in_place(static_cast<int>(l));
  }
  if (plan.kv_workspace) add(plan, plan.kv_workspace_tier, 4 * plan.kv_bytes);
  // A separate device builds a delegated cache's prefill slots in its own memory first
  // (kv_prefill's staging), then copies them to the host.
  const bool delegated = std::any_of(plan.kv_home.begin(), plan.kv_home.end(),
                                     [](TierKind k) { return k != TierKind::Device; });
  if (s.separate_device && p.cpu_cache_compute && delegated) {
    add(plan, TierKind::Device, 2 * plan.kv_bytes + 2 * plan.meta_bytes);
  }
}

void plan_activations(MemoryPlan& plan, const ModelFootprint& m, const Policy& p,
                      const PlanShape& s) {
  const uint64_t gbs = static_cast<uint64_t>(p.gpu_batch_size);
  const uint64_t rows = gbs * static_cast<uint64_t>(s.prompt_len);
  // Each GPU batch's hidden states go to a tier by the cumulative rule.
  plan.act_bytes = plan_round(rows * static_cast<uint64_t>(m.hidden) * 4);
  const std::vector<uint64_t> per_batch(static_cast<size_t>(p.num_gpu_batches), 1);
  plan.act_home = assign_home_tiers(per_batch, TierShares{p.act_gpu, p.act_cpu, p.act_disk()});
  for (TierKind k : plan.act_home) {
    add(plan, k, plan.act_bytes);
    plan.act_workspace = plan.act_workspace || plan.staged(k);
  }
  if (plan.act_workspace) add(plan, TierKind::Device, plan.act_bytes);
  // Prefill buffers on the compute device: K, V and column sums of one GPU batch, and logits.
  const uint64_t kv_rows = rows * static_cast<uint64_t>(m.kv_heads * m.head_dim) * 4;
  add(plan, TierKind::Device,
      2 * plan_round(kv_rows) +
          plan_round(gbs * static_cast<uint64_t>(m.kv_heads * s.prompt_len) * 4) +
          plan_round(gbs * static_cast<uint64_t>(m.vocab) * 4));
  // The layers' working buffers (ops/scratch.h) on the compute device, whichever it is (on a
  // CPU they are host memory like the device tier), and where the CPU computes, its GEMMs'
  // bounded operand buffers.
  // Beside the model's, the engine's own (engine/layer_step.cc, kv_slots.cc): per prompt row
  // each KV head's starting score and kept position; per sequence decode's q, k, v and attention
  // output (and their copies where a delegated cache lives), the last hidden row, and each KV
  // head's slot probabilities, victim and changed slot.
  const uint64_t kvh = static_cast<uint64_t>(m.kv_heads);
  const uint64_t qkv =
      static_cast<uint64_t>(2 * m.query_heads + 2 * m.kv_heads) * static_cast<uint64_t>(m.head_dim);
  const uint64_t per_row = static_cast<uint64_t>(m.scratch_elems_per_row) + 2 * kvh;
  const uint64_t per_seq = 2 * qkv + static_cast<uint64_t>(m.hidden) +
                           kvh * (static_cast<uint64_t>(s.kv_slots) + 1) + 2 * kvh;
  plan.op_scratch_bytes =
      (rows * per_row + gbs * per_seq) * 4 + (s.gpu ? 0 : cpu_reserve::kGemmScratchBytes);
  add(plan, TierKind::Device, plan.op_scratch_bytes);
}

// A GPU's own memory besides the tensors: the context and cuBLAS workspace, and the pool the
// ops' temporaries come from. The compute stream's temporaries are freed in stream order before
// the next op's are taken, so the pool holds the largest op's at a time, plus the store queue's
// gather buffer, which works beside the compute.
void plan_gpu_runtime(MemoryPlan& plan, const ModelFootprint& m, const Policy& p,
                      const PlanShape& s) {
  if (!s.gpu) return;
  namespace r = gpu_reserve;
  const uint64_t gbs = static_cast<uint64_t>(p.gpu_batch_size);
  const uint64_t heads = static_cast<uint64_t>(m.query_heads);
  const uint64_t prompt = static_cast<uint64_t>(s.prompt_len);
  const uint64_t gemm = 2 * r::kGemmOperandChunkBytes;
  const uint64_t prefill_row_stats = gbs * heads * prompt * 2 * 4;  // max and normalizer per row
  const uint64_t decode_head_probs = gbs * heads * static_cast<uint64_t>(s.kv_slots + 1) * 4;
  // A compressed cache is dequantized to f32 K and V before decode attention reads it.
  const uint64_t decoded_cache = s.kv_format.is_packed()
                                     ? 2 * gbs * static_cast<uint64_t>(m.kv_heads * s.kv_slots) *
                                           static_cast<uint64_t>(m.head_dim) * 4
                                     : 0;
  const uint64_t sample_rows = std::min<uint64_t>(gbs, r::kSampleRowChunk);
  const uint64_t sampling = sample_rows * static_cast<uint64_t>(m.vocab) * r::kSampleBytesPerEntry;
  plan.gpu_pool_bytes =
      plan_round(std::max({gemm, prefill_row_stats, decode_head_probs + decoded_cache, sampling})) +
      r::kStoreGatherBytes;
  plan.gpu_fixed_bytes = r::kContextBytes + r::kCublasWorkspaceBytes;
  add(plan, TierKind::Device, plan.gpu_pool_bytes + plan.gpu_fixed_bytes);
}

}  // namespace

const std::vector<uint64_t>* ModelFootprint::packed(PackedFormat f) const {
  for (const PackedSizes& s : packed_bytes) {
    if (s.format == f) return &s.bytes;
  }
  return nullptr;
}

void seal_footprint(ModelFootprint& f) {
  f.fingerprint = footprint_fingerprint(f);
}

MemoryPlan plan_memory(const ModelFootprint& model, const Policy& p, const PlanShape& shape) {
  validate_policy(p);
  MemoryPlan plan;
  plan.cpu_cache_compute = p.cpu_cache_compute;
  plan.separate_device = shape.separate_device;
  plan.gpu = shape.gpu;
  plan_weights(plan, model, p);
  plan_kv(plan, model, p, shape);
  plan_activations(plan, model, p, shape);
  plan_gpu_runtime(plan, model, p, shape);
  return plan;
}

void check_plan_fits(const MemoryPlan& plan, const Policy& p, const HardwareLimits& lim) {
  const uint64_t budgets[kTierKinds] = {lim.device_mem, lim.host_mem, lim.disk_mem};
  std::string over;
  for (int t = 0; t < kTierKinds; ++t) {
    if (budgets[t] == 0 || plan.bytes[t] <= budgets[t]) continue;
    over += detail::concat(over.empty() ? "" : "; ", tier_kind_name(static_cast<TierKind>(t)),
                           " needs an estimated ", plan.bytes[t] / 1048576.0,
                           " MiB but its budget is ", budgets[t] / 1048576.0, " MiB");
  }
  H2OFLEX_INPUT_CHECK(over.empty(), "policy ", p.summary(), " does not fit: ", over);
}

}  // namespace h2oflex::policy
