#include "policy/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

namespace h2oflex::policy {

namespace {

std::vector<int> default_gpu_batch_sizes() {
  std::vector<int> v = {1, 2, 4, 8, 16, 32};
  for (int b = 32; b < 8192;) {
    v.push_back(b * 3 / 2);
    b *= 2;
    v.push_back(b);
  }
  return v;
}

// One (weights, cache) split on a tier triple, in percent.
struct Split {
  double gpu, cpu;
};

// One choice of storage formats: how the layers' matrices and the KV rows are packed (None:
// plain).
struct Compression {
  PackedFormat weight = PackedFormat::None, cache = PackedFormat::None;
  bool packs() const { return weight != PackedFormat::None || cache != PackedFormat::None; }
};
constexpr Compression kPlain{};
constexpr double kCoarseStep = 1.25;  // the compression pass's grid step / placement_step
constexpr PackedFormat kQ4 = PackedFormat::Q4G64, kQ8 = PackedFormat::Q8_0,
                       kNone = PackedFormat::None;
// Those that decide whether a batch shape fits at all: packed weights never take more memory
// than plain ones (the GEMM dequantizes into its bounded operand pieces), while a packed cache
// may (the GPU's decode dequantizes it whole into scratch), so the smallest weights (q4_g64)
// with and without the smallest cache.
constexpr Compression kCompressedFrugal[] = {{kQ4, kQ4}, {kQ4, kNone}};

// The formats the compression pass tries: weights in {plain, q8_0, q4_g64} x KV rows in
// {plain, q8_0, q4_g64}, without plain x plain (the first pass's). q4_1 and q4_0 are left out:
// the cost model prices every format by its bytes and one unpack rate, and q4_1 (20 bytes per
// 32 values) is larger than q4_g64 (36 per 64) while q4_0 (18 per 32) is the same size, so
// neither can win. q8_0 only on the CPU (CUDA's q8_0 kernels are tested against their CPU twins
// but have not yet run on a GPU: the planner picks only what has), and for the KV a head_dim
// of whole blocks.
std::vector<Compression> compression_choices(const ModelShape& m, const HardwareProfile& hw) {
  const bool cpu = hw.compute_device == ComputeDevice::Cpu;
  // Most precise first: a later choice replaces an earlier one only when predicted faster, so
  // of formats that tie (a compute-bound run that fits either way) the more precise is kept.
  std::vector<PackedFormat> weights{kNone, kQ4}, caches{kNone, kQ4};
  if (cpu && m.footprint.packed(kQ8) != nullptr) weights.insert(weights.begin() + 1, kQ8);
  if (cpu && row_fits(kQ8, m.head_dim) && m.head_dim >= packed_format_row(kQ8).block_values) {
    caches.insert(caches.begin() + 1, kQ8);
  }
  // A format the footprint has no sizes for, or that changes no tensor (a checkpoint's own
  // blocks kept), is not a choice for the weights.
  const auto changes_weights = [&](PackedFormat f) {
    const std::vector<uint64_t>* sizes = m.footprint.packed(f);
    if (f == kNone) return true;
    if (sizes == nullptr) return f == kQ4;  // a shape without packed sizes: as compress_weight
    for (size_t i = 0; i < sizes->size(); ++i) {
      if ((*sizes)[i] != 0 && (*sizes)[i] != m.footprint.tensor_bytes[i]) return true;
    }
    return false;
  };
  std::vector<Compression> out;
  for (PackedFormat w : weights) {
    if (!changes_weights(w)) continue;
    for (PackedFormat c : caches) {
      if (w != kNone || c != kNone) out.push_back({w, c});
    }
  }
  return out;
}

std::vector<Split> split_grid(double step, bool allow_disk) {
  std::vector<Split> v;
  const int k = static_cast<int>(std::round(100 / step));
  for (int g = 0; g <= k; ++g) {
    for (int c = 0; c + g <= k; ++c) {
      if (!allow_disk && g + c != k) continue;
      v.push_back(
          {std::min(100.0, g * step), std::min(100.0 - std::min(100.0, g * step), c * step)});
    }
  }
  return v;
}

class Searcher {
 public:
  Searcher(const ModelShape& m, const HardwareProfile& hw, const Workload& w, const TierBytes& cap,
           const SearchOptions& opt)
      : m_(m), hw_(hw), w_(w), cap_(cap), opt_(opt) {
    grid_ = split_grid(opt.placement_step, opt.allow_disk);
    // The compression pass tries three choices per batch shape; a coarser grid (25% steps for
    // the default 20) keeps its cost near the first pass's, and the refinement's 10..1% steps
    // find the placement between grid points.
    coarse_grid_ = split_grid(kCoarseStep * opt.placement_step, opt.allow_disk);
    acts_ = {{100, 0}, {0, 100}};
    if (opt.allow_disk) acts_.push_back({0, 0});
  }

  bool fits(const Policy& p) const {
    return fits_within(estimate_memory(m_, p, w_, separate()).peak, cap_);
  }

  bool separate() const { return hw_.compute_device != ComputeDevice::Cpu; }

  // Any placement of this batch shape that fits with compression `c`? Tries the
  // cheapest-on-memory first.
  bool feasible(int gbs, int ngb, Compression c) const {
    Policy p = base(gbs, ngb, c);
    const std::vector<Split>& grid = grid_for(c);
    // Memory only falls as data leaves the device, so the most device-frugal placements
    // decide feasibility; test a few extremes before the grid.
    for (const Split& ws : grid) {
      for (const Split& cs : grid) {
        for (const Split& as : acts_) {
          for (bool del : {true, false}) {
            set(p, ws, cs, as, del);
            if (fits(p)) return true;
          }
        }
      }
    }
    return false;
  }

  // Best placement for one batch shape and compression over the grid; returns throughput (0 if
  // none fits, or if even its computation alone cannot exceed `floor`).
  double best_placement(int gbs, int ngb, Compression c, double floor, Policy& best,
                        CostEstimate& best_e) {
    Policy p = base(gbs, ngb, c);
    // Exact pruning: no placement is faster than the bound (1e-9: rounding).
    if (floor > 0 && throughput_bound(m_, hw_, p, w_, opt_.decode_context) * (1 + 1e-9) <= floor) {
      ++pruned_;
      return 0;
    }
    double best_tp = 0;
    const std::vector<Split>& grid = grid_for(c);
    for (const Split& ws : grid) {
      for (const Split& cs : grid) {
        for (const Split& as : acts_) {
          for (bool del : {false, true}) {
            if (del && cs.gpu >= 100) continue;  // nothing to delegate
            set(p, ws, cs, as, del);
            consider(p, best_tp, best, best_e);
          }
        }
      }
    }
    return best_tp;
  }

  // Coordinate descent from a good point: move `step` percent of one kind (weights, cache,
  // activations) between two tiers, change num_gpu_batches by one or by ~10%, or (with
  // `switch_compression`) change the weights' or the KV's format to another of `choices`.
  void refine(Policy& best, CostEstimate& best_e, double& best_tp, bool switch_compression,
              std::span<const Compression> choices = {}) {
    struct Kind {
      double Policy::*gpu;
      double Policy::*cpu;
    };
    const Kind kinds[] = {{&Policy::w_gpu, &Policy::w_cpu},
                          {&Policy::cache_gpu, &Policy::cache_cpu},
                          {&Policy::act_gpu, &Policy::act_cpu}};
    for (double step : {10.0, 5.0, 2.0, 1.0}) {
      bool improved = true;
      while (improved) {
        improved = false;
        for (const Kind& k : kinds) {
          // Tier pairs (from, to): 0 gpu, 1 cpu, 2 disk.
          for (int from = 0; from < 3; ++from) {
            for (int to = 0; to < 3; ++to) {
              if (from == to || (!opt_.allow_disk && (from == 2 || to == 2))) continue;
              Policy p = best;
              double t[3] = {p.*k.gpu, p.*k.cpu, 100 - p.*k.gpu - p.*k.cpu};
              if (t[from] < step - 1e-9) continue;
              t[from] -= step;
              t[to] += step;
              p.*k.gpu = std::max(0.0, t[0]);
              p.*k.cpu = std::max(0.0, t[1]);
              if (p.*k.gpu + p.*k.cpu > 100 + 1e-9) continue;
              improved |= consider(p, best_tp, best, best_e);
            }
          }
        }
        const int n = best.num_gpu_batches;
        for (int ngb : {n - 1, n + 1, n * 9 / 10, n * 11 / 10}) {
          if (ngb < 1 || ngb == n || ngb > opt_.max_num_gpu_batches) continue;
          Policy p = best;
          p.num_gpu_batches = ngb;
          improved |= consider(p, best_tp, best, best_e);
        }
        if (switch_compression) {
          // Every choice that keeps one of the two formats and changes the other.
          const Compression now = formats_of(best);
          for (const Compression& c : choices) {
            if ((c.weight == now.weight) == (c.cache == now.cache)) continue;
            Policy p = best;
            set_formats(p, c);
            improved |= consider(p, best_tp, best, best_e);
          }
        }
      }
    }
  }

  long evaluated() const { return evaluated_; }
  long pruned() const { return pruned_; }

  // The policy's keys for formats `c`: q4_g64 as FlexGen's compress_weight / compress_cache,
  // another format as weight_format / cache_format.
  static void set_formats(Policy& p, Compression c) {
    p.compress_weight = c.weight == kQ4;
    p.weight_format =
        c.weight == kQ4 || c.weight == kNone ? WeightFormat{} : WeightFormat::packed_as(c.weight);
    p.compress_cache = c.cache == kQ4;
    p.cache_format = c.cache == kQ4 ? kNone : c.cache;
  }
  static Compression formats_of(const Policy& p) { return {p.weight_packing(), p.kv_packing()}; }

 private:
  Policy base(int gbs, int ngb, Compression c) const {
    Policy p;
    p.gpu_batch_size = gbs;
    p.num_gpu_batches = ngb;
    p.overlap = true;
    p.pin_weight = true;
    set_formats(p, c);
    return p;
  }

  static void set(Policy& p, const Split& ws, const Split& cs, const Split& as, bool del) {
    p.w_gpu = ws.gpu, p.w_cpu = ws.cpu;
    p.cache_gpu = cs.gpu, p.cache_cpu = cs.cpu;
    p.act_gpu = as.gpu, p.act_cpu = as.cpu;
    p.cpu_cache_compute = del;
  }

  bool consider(const Policy& p, double& best_tp, Policy& best, CostEstimate& best_e) {
    const MemoryEstimate mem = estimate_memory(m_, p, w_, separate());
    if (!fits_within(mem.peak, cap_)) return false;
    ++evaluated_;
    const CostEstimate e = estimate_cost(m_, hw_, p, w_, opt_.decode_context, mem);
    // Equal predicted throughput (e.g. link time hidden under compute): prefer the policy that
    // moves less, which is the safer bet when the overlap is imperfect.
    const bool tie = best_tp > 0 && std::fabs(e.total_tok_s - best_tp) <= 1e-9 * best_tp &&
                     traffic(e) < traffic(best_e) * (1 - 1e-9);
    if (e.total_tok_s > best_tp * (1 + opt_.min_gain) || tie) {
      best_tp = e.total_tok_s;
      best = p;
      best_e = e;
      return true;
    }
    return false;
  }

  // Seconds of link time per layer, both phases.
  static double traffic(const CostEstimate& e) {
    return e.prefill.ctog + e.prefill.gtoc + e.prefill.dtoc + e.prefill.ctod + e.decode.ctog +
           e.decode.gtoc + e.decode.dtoc + e.decode.ctod;
  }

  const ModelShape& m_;
  const HardwareProfile& hw_;
  const Workload& w_;
  TierBytes cap_;
  SearchOptions opt_;
  const std::vector<Split>& grid_for(Compression c) const {
    return c.packs() ? coarse_grid_ : grid_;
  }

  std::vector<Split> grid_, coarse_grid_;
  std::vector<Split> acts_;
  long evaluated_ = 0;
  long pruned_ = 0;
};

// 1..8, then ~x1.25 steps, always ending at `max`.
std::vector<int> ngb_ladder(int max) {
  std::vector<int> v;
  for (int k = 1; k <= max;) {
    v.push_back(k);
    k = k < 8 ? k + 1 : std::max(k + 1, k * 5 / 4);
  }
  if (v.empty() || v.back() != max) v.push_back(max);
  return v;
}

// One pass of the search over the batch shapes with the compression choices `choices`; a
// shape fits when some placement fits with one of `frugal` (the most memory-frugal of them).
// The best found goes to r (found, policy, estimate) if it exceeds `floor` (a throughput to
// beat).
void search_pass(Searcher& s, const SearchOptions& opt, const std::vector<int>& sizes,
                 std::span<const Compression> choices, std::span<const Compression> frugal,
                 double floor, SearchResult& r) {
  double best_tp = floor;
  auto feasible = [&](int gbs, int ngb) {
    return std::any_of(frugal.begin(), frugal.end(),
                       [&](Compression c) { return s.feasible(gbs, ngb, c); });
  };
  for (int gbs : sizes) {
    if (!feasible(gbs, 1)) break;  // larger GPU batches need more memory still
    // Largest feasible ngb: doubling, then bisection on (lo feasible, hi infeasible].
    int lo = 1, hi = 2;
    while (hi <= opt.max_num_gpu_batches && feasible(gbs, hi)) {
      lo = hi;
      hi *= 2;
    }
    hi = std::min(hi, opt.max_num_gpu_batches + 1);
    while (hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      (feasible(gbs, mid) ? lo : hi) = mid;
    }
    for (int ngb : ngb_ladder(lo)) {
      for (const Compression& c : choices) {
        Policy p;
        CostEstimate e;
        const double tp = s.best_placement(gbs, ngb, c, best_tp * (1 + opt.min_gain), p, e);
        if (tp > best_tp * (1 + opt.min_gain)) {
          best_tp = tp;
          r.policy = p;
          r.estimate = e;
          r.found = true;
        }
      }
    }
  }
}

}  // namespace

TierBytes search_capacity(const HardwareProfile& hw, const HardwareLimits& limits) {
  TierBytes cap = capacities(hw, hw.usable_fraction);
  auto lower = [](double& c, uint64_t limit) {
    if (limit > 0) c = c > 0 ? std::min(c, static_cast<double>(limit)) : limit;
  };
  lower(cap.device, limits.device_mem);
  lower(cap.host, limits.host_mem);
  lower(cap.disk, limits.disk_mem);
  return cap;
}

SearchResult search_policy(const ModelShape& model, const HardwareProfile& hw, const Workload& w,
                           const HardwareLimits& limits, const SearchOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult r;
  r.capacity = search_capacity(hw, limits);
  Searcher s(model, hw, w, r.capacity, opt);
  const std::vector<int> sizes =
      opt.gpu_batch_sizes.empty() ? default_gpu_batch_sizes() : opt.gpu_batch_sizes;
  const Compression plain[] = {kPlain};
  search_pass(s, opt, sizes, plain, plain, 0, r);
  if (r.found) {
    double tp = r.estimate.total_tok_s;
    s.refine(r.policy, r.estimate, tp, false);
  }
  if (opt.allow_compression) {
    // Everything the first pass tried is left out (placements without compression); shapes
    // whose computation cannot beat its result are skipped.
    SearchResult c;
    const std::vector<Compression> choices = compression_choices(model, hw);
    search_pass(s, opt, sizes, choices, kCompressedFrugal, r.found ? r.estimate.total_tok_s : 0, c);
    if (c.found) {
      double tp = c.estimate.total_tok_s;
      s.refine(c.policy, c.estimate, tp, true, choices);
      if (!r.found || tp > r.estimate.total_tok_s) {
        r.found = true;
        r.policy = c.policy;
        r.estimate = c.estimate;
      }
    }
  }
  if (!r.found) {
    // Explain with the most memory-frugal policy.
    Policy p;
    p.gpu_batch_size = sizes.front();
    p.w_gpu = 0, p.w_cpu = opt.allow_disk ? 0 : 100;
    p.cache_gpu = 0, p.cache_cpu = opt.allow_disk ? 0 : 100;
    p.act_gpu = 0, p.act_cpu = opt.allow_disk ? 0 : 100;
    p.cpu_cache_compute = true;
    if (opt.allow_compression) Searcher::set_formats(p, {kQ4, kQ4});
    r.why_not = memory_violation(
        estimate_memory(model, p, w, hw.compute_device != ComputeDevice::Cpu).peak, r.capacity);
  }
  r.evaluated = s.evaluated();
  r.pruned = s.pruned();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace h2oflex::policy
