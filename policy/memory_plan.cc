#include "policy/memory_plan.h"

#include <algorithm>

#include "policy/home_tiers.h"
#include "runtime/core/error.h"

namespace h2oflex::policy {

uint64_t plan_round(uint64_t bytes) {
  return (bytes + 4095) / 4096 * 4096;
}

bool MemoryPlan::kv_in_place(int layer) const {
  const TierKind k = kv_home.at(static_cast<size_t>(layer));
  return k == TierKind::Device || (k == TierKind::Host && cpu_cache_compute);
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

void plan_weights(MemoryPlan& plan, const ModelFootprint& m, const Policy& p) {
  // Home tiers by FlexGen's cumulative rule over the tensors in execution order.
  plan.weight_bytes = m.tensor_bytes;
  plan.weight_home = assign_home_tiers(m.tensor_bytes, TierShares{p.w_gpu, p.w_cpu, p.w_disk()});
  for (size_t i = 0; i < m.tensor_bytes.size(); ++i) {
    add(plan, plan.weight_home[i], plan_round(m.tensor_bytes[i]));
  }
  // The workspace that holds one unit's staged weights (double-buffered).
  plan.workspace_offset.assign(m.unit_tensors.size(), {});
  for (size_t u = 0; u < m.unit_tensors.size(); ++u) {
    uint64_t off = 0;
    for (size_t i : m.unit_tensors[u]) {
      plan.workspace_offset[u].push_back(off);
      if (plan.staged(plan.weight_home[i])) off += plan_round(m.tensor_bytes[i]);
    }
    plan.weight_workspace = std::max(plan.weight_workspace, off);
  }
  add(plan, TierKind::Device, 2 * plan.weight_workspace);
}

void plan_kv(MemoryPlan& plan, const ModelFootprint& m, const Policy& p, const PlanShape& s) {
  const uint64_t gbs = static_cast<uint64_t>(p.gpu_batch_size);
  const uint64_t ngb = static_cast<uint64_t>(p.num_gpu_batches);
  const uint64_t records = gbs * static_cast<uint64_t>(m.kv_heads * s.kv_slots);
  plan.kv_bytes = plan_round(records * s.kv_format.bytes(static_cast<uint64_t>(m.head_dim)));
  plan.meta_bytes = plan_round(records * 4);
  // Each layer's cache goes to a tier by the cumulative rule over layers.
  const std::vector<uint64_t> per_layer(static_cast<size_t>(m.layers), 1);
  plan.kv_home = assign_home_tiers(per_layer, TierShares{p.cache_gpu, p.cache_cpu, p.cache_disk()});
  for (int64_t l = 0; l < m.layers; ++l) {
    const TierKind k = plan.kv_home[static_cast<size_t>(l)];
    add(plan, k, 2 * plan.kv_bytes * ngb);
    add(plan, plan.meta_tier(k), 2 * plan.meta_bytes * ngb);
    plan.kv_workspace = plan.kv_workspace || !plan.kv_in_place(static_cast<int>(l));
  }
  plan.kv_workspace_tier = p.cpu_cache_compute ? TierKind::Host : TierKind::Device;
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
  // On a separate device the layers' working buffers (ops/scratch.h) live there too.
  if (s.separate_device) {
    add(plan, TierKind::Device, rows * static_cast<uint64_t>(m.scratch_elems_per_row) * 4);
  }
}

}  // namespace

MemoryPlan plan_memory(const ModelFootprint& model, const Policy& p, const PlanShape& shape) {
  validate_policy(p);
  MemoryPlan plan;
  plan.cpu_cache_compute = p.cpu_cache_compute;
  plan.separate_device = shape.separate_device;
  plan_weights(plan, model, p);
  plan_kv(plan, model, p, shape);
  plan_activations(plan, model, p, shape);
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
