// The formulas follow FlexGen's experimental/cost_model.py (FLEXGEN.md, "Cost model"); the
// extensions and the reasons for them are commented where they enter.
#include "policy/cost_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"
#include "runtime/core/storage_format.h"

namespace h2oflex::policy {

double ModelShape::total_weight_bytes() const {
  return (static_cast<double>(layers) * layer_params() + embedding_params()) * weight_bytes;
}

namespace {

// Plain and packed bytes of layer 0's tensors packed in `packing` (its unit is 1: the embedding
// unit comes first, models/decoder_model.h), from the footprint's per-tensor sizes.
std::pair<double, double> layer_packed_bytes(const ModelShape& m, PackedFormat packing) {
  const ModelFootprint& f = m.footprint;
  const std::vector<uint64_t>* sizes = f.packed(packing);
  if (packing == PackedFormat::None || sizes == nullptr) return {0, 0};
  H2OFLEX_CHECK(f.unit_tensors.size() >= 2 && sizes->size() == f.tensor_bytes.size(), "model '",
                m.name, "': footprint without a layer unit's packed sizes");
  double plain = 0, packed = 0;
  for (size_t i : f.unit_tensors[1]) {
    if ((*sizes)[i] == 0) continue;  // stays plain
    plain += static_cast<double>(f.tensor_bytes[i]);
    packed += static_cast<double>((*sizes)[i]);
  }
  return {plain, packed};
}

}  // namespace

double ModelShape::layer_stored_weight_bytes(PackedFormat packing) const {
  const auto [plain, packed] = layer_packed_bytes(*this, packing);
  return layer_weight_bytes() - plain + packed;
}

double ModelShape::layer_decoded_weight_bytes(PackedFormat packing) const {
  return layer_packed_bytes(*this, packing).first;
}

double ModelShape::kv_token_bytes(PackedFormat kv_packing) const {
  const uint64_t row = kv_storage_format(kv_dtype(), kv_packing).bytes(head_dim);
  return 2 * static_cast<double>(kv_heads) * static_cast<double>(row);
}

namespace {

// Everything both halves of the model derive from (model, policy, workload).
struct Derived {
  double l, h1, nh, V;
  double nkv;       // KV heads: positions and scores are kept per KV head
  double q_width;   // query heads x head_dim: what attention computes over
  double kv_width;  // KV heads x head_dim: what one token stores per K or V
  double s, n;
  double gbs, ngb, bls;
  double wg, wc, wn, cg, cc, cn, hg, hc, hn;
  double wl;         // bytes of one layer's weights as stored and moved (compressed or not)
  double wl_plain;   // ... at their plain size: what the layer's GEMMs read
  double wl_dec;     // ... that dequantization produces each time the layer computes a batch
  double emb;        // bytes of the embeddings (the LM head is tied to the token embedding)
  double kv_tok;     // bytes of one token's K and V in one layer as stored (compressed or not)
  double kv_dec;     // ... at their plain size when compressed ((de)quantized), else 0
  double meta_tok;   // bookkeeping bytes per kept token per layer (positions, H2O scores)
  double score_tok;  // H2O score bytes per kept token per layer (rewritten every step)
  bool bounded;
  double budget;    // B (tokens), or s + n for the full cache
  double slots;     // KV slots allocated per (sequence, layer)
  double stored_p;  // tokens per sequence written by prefill
};

Derived derive(const ModelShape& m, const Policy& p, const Workload& w) {
  H2OFLEX_INPUT_CHECK(m.layers > 0 && m.hidden > 0 && m.heads > 0 && m.kv_heads > 0 &&
                          m.head_dim > 0 && m.layer_param_count > 0,
                      "model '", m.name, "': shape has a zero dimension");
  H2OFLEX_INPUT_CHECK(w.prompt_len >= 1 && w.gen_len >= 1, "workload: prompt_len ", w.prompt_len,
                      " and gen_len ", w.gen_len, " must be >= 1");
  Derived d;
  d.l = static_cast<double>(m.layers);
  d.h1 = static_cast<double>(m.hidden);
  d.nh = static_cast<double>(m.heads);
  d.nkv = static_cast<double>(m.kv_heads);
  d.q_width = static_cast<double>(m.q_width());
  d.kv_width = static_cast<double>(m.kv_width());
  d.V = static_cast<double>(m.vocab);
  d.s = w.prompt_len;
  d.n = w.gen_len;
  d.gbs = p.gpu_batch_size;
  d.ngb = p.num_gpu_batches;
  d.bls = d.gbs * d.ngb;
  d.wg = p.w_gpu / 100, d.wc = p.w_cpu / 100, d.wn = std::max(0.0, 1 - d.wg - d.wc);
  d.cg = p.cache_gpu / 100, d.cc = p.cache_cpu / 100, d.cn = std::max(0.0, 1 - d.cg - d.cc);
  d.hg = p.act_gpu / 100, d.hc = p.act_cpu / 100, d.hn = std::max(0.0, 1 - d.hg - d.hc);
  d.wl = m.layer_stored_weight_bytes(p.weight_packing());
  d.wl_plain = m.layer_weight_bytes();
  d.wl_dec = m.layer_decoded_weight_bytes(p.weight_packing());
  d.emb = m.embedding_params() * m.weight_bytes;  // embeddings and LM head stay plain
  d.kv_tok = m.kv_token_bytes(p.kv_packing());
  d.kv_dec = p.kv_packing() != PackedFormat::None ? m.kv_token_bytes(PackedFormat::None) : 0;
  const double full = d.s + d.n;
  // The engine's rule for this workload: what it allocates and whether scores change per step.
  const KvRule rule = w.kv.resolve(w.prompt_len, w.gen_len);
  const double kept = rule.capacity(w.prompt_len, w.gen_len);
  d.bounded = rule.evicts() && kept < full;
  d.budget = d.bounded ? kept : full;
  // A bounded cache keeps each slot's position (int32 per KV head) and, with attention scores,
  // the score (fp32 per KV head); the scores change every step, so they are rewritten every step.
  const bool scored = d.bounded && rule.decode_scores();
  d.meta_tok = d.bounded ? 4 * d.nkv * (scored ? 2 : 1) : 0;
  d.score_tok = scored ? 4 * d.nkv : 0;
  // B slots plus the one the incoming token uses before the eviction decision.
  d.slots = d.bounded ? std::min(d.budget + 1, full) : full;
  d.stored_p = std::min(d.s, d.budget);
  return d;
}

// Decode context tokens per sequence: what one decode step reads and attends to.
double decode_context(const Derived& d, DecodeContext ctx) {
  const double full = ctx == DecodeContext::Mean ? d.s + d.n / 2 : d.s + 1;
  return d.bounded ? std::min(d.budget, full) : full;
}

}  // namespace

PlanShape plan_shape(const ModelShape& model, const Policy& p, const Workload& w,
                     bool separate_device) {
  PlanShape s;
  s.prompt_len = w.prompt_len;
  s.gen_len = w.gen_len;
  s.kv_slots = w.kv.resolve(w.prompt_len, w.gen_len).capacity(w.prompt_len, w.gen_len);
  s.kv_format = kv_storage_format(model.kv_dtype(), p.kv_packing());
  s.separate_device = separate_device;
  s.gpu = separate_device;  // the cost model's separate device is a GPU
  return s;
}

MemoryEstimate estimate_memory(const ModelShape& model, const Policy& p, const Workload& w,
                               bool separate_device) {
  H2OFLEX_CHECK(!model.footprint.tensor_bytes.empty(), "model '", model.name,
                "': no footprint to estimate memory from");
  const MemoryPlan plan = plan_memory(model.footprint, p, plan_shape(model, p, w, separate_device));
  const TierBytes bytes{static_cast<double>(plan.on(TierKind::Device)),
                        static_cast<double>(plan.on(TierKind::Host)),
                        static_cast<double>(plan.on(TierKind::Disk))};
  return {bytes, bytes, bytes};
}

namespace {

// The compute of one layer, per phase: GEMMs, attention, (de)quantization and the fixed
// overhead — comp of FlexGen's model. `best_case`: the least it can be over every placement
// (decode attention and the cache's dequantization all at the faster of device and host), for
// throughput_bound.
struct LayerCompute {
  double prefill = 0, prefill_dequant = 0, decode = 0, decode_dequant = 0;
};

LayerCompute layer_compute(const Derived& d, const ModelShape& m, const HardwareProfile& hw,
                           const Policy& p, double ctx, bool best_case) {
  LayerCompute c;
  const bool delegated = p.cpu_cache_compute;
  const double gemm_tok = m.layer_gemm_flops_per_token();
  const double off_dev_cache = d.cc + d.cn;  // share of the KV not resident on the device
  const double mm_rate_g = hw.mm_flops_g_at(p.gpu_batch_size);
  // 4-bit compression (FlexGen's compress_weight / compress_cache, flex_opt.py and
  // compression.py): weights are stored and moved compressed and dequantized on the compute
  // device for every GPU batch a layer computes (FlexGen's attention and MLP decompress their
  // matrices on every call; h2oflex's ops::linear dequantizes its pieces on every call); K and V
  // are quantized on the device as they are produced (prefill's s tokens, decode's new one), and
  // the cache a decode step reads is dequantized where its attention runs — on the device (FlexGen
  // copies the compressed cache there and decompresses it), or, with cpu_cache_compute, on the host
  // (FlexGen's CPU attention decompresses the host-resident cache into its fp32 workspace). Rates
  // are bytes of plain-size output per second. GGUF's q8_0 / q4_0 / q4_1 (weight_format,
  // cache_format) are priced at the same rate: no profile measures them apart, and their CPU
  // kernels do the same work per output value as q4_g64's (a code and its block's scale, plus a
  // minimum for q4_1, to one f32 operand), so the cost of a format is its bytes and this rate.
  const double rg = hw.dequant_rate_device(), rc = hw.dequant_rate_host();
  const double weight_dec = d.ngb * d.wl_dec;
  // ---- prefill ----
  {
    // GEMMs (never faster than reading the layer's weights once per GPU batch) + attention
    // (FlexGen counts the full s^2, not the causal half). H2O adds the column sums of the
    // probabilities (one add per score) and the selection, both O(nh*s^2) << 4*s^2*h1. Each
    // query head attends (GQA shares K and V, not the work). The GEMMs read plain weights (the
    // dequantized ones under compress_weight).
    const double gemm =
        std::max(d.bls * d.s * gemm_tok / hw.mm_flops_p, d.ngb * d.wl_plain / hw.device_mem_bdw);
    const double attn_work = 4 * d.s * d.s * d.q_width + (d.bounded ? 2 * d.nh * d.s * d.s : 0);
    c.prefill_dequant = (weight_dec + d.bls * d.stored_p * d.kv_dec) / rg;
    // Fixed cost per layer and GPU batch (op dispatch, thread fork/join; 0 unless profiled).
    c.prefill =
        gemm + d.bls * attn_work / hw.bmm_flops_p + c.prefill_dequant + d.ngb * hw.layer_overhead_s;
  }
  // ---- decode ----
  {
    // Decode GEMMs of a small GPU batch are bound by reading the weights from device memory,
    // which FlexGen's fit (made on large batches) leaves out; it is what limits OPT-6.7B at
    // batch 2 on a T4. The rate itself may depend on the GPU batch (a profiled CPU).
    const double gemm =
        d.ngb * std::max(d.gbs * gemm_tok / mm_rate_g, d.wl_plain / hw.device_mem_bdw);
    // Attention over `ctx` tokens: 4*ctx*h1 per sequence (q.K and p.V); a bounded cache adds
    // its score accumulation and one arg-min over the slots per head (2*nh*ctx, ~1/head_dim).
    const double attn_work = d.bls * (4 * ctx * d.q_width + (d.bounded ? 2 * d.nh * ctx : 0));
    const double cache_dec = d.bls * ctx * d.kv_dec;  // the cache one step reads, dequantized
    const double host_attn = hw.cpu_flops_real(p.gpu_batch_size, m.hidden);
    double attn, cache_deq;
    if (best_case) {
      attn = attn_work / std::max(hw.bmm_flops_g, host_attn);
      cache_deq = cache_dec / std::max(rg, rc);
    } else {
      attn = attn_work * d.cg / hw.bmm_flops_g +
             attn_work * off_dev_cache / (delegated ? host_attn : hw.bmm_flops_g);
      cache_deq = cache_dec * d.cg / rg + cache_dec * off_dev_cache / (delegated ? rc : rg);
    }
    c.decode_dequant = (weight_dec + d.bls * d.kv_dec) / rg + cache_deq;
    c.decode = gemm + attn + c.decode_dequant + d.ngb * hw.layer_overhead_s;
  }
  return c;
}

// The LM head and embeddings' compute once per step (FlexGen's model leaves them out; for
// small models the LM head is a large share: OPT-125m's is ~45% of its decoder GEMMs). Prefill
// computes logits for the last position only.
double head_prefill_compute(const Derived& d, const ModelShape& m, const HardwareProfile& hw) {
  return d.bls * 2 * m.head_param_count / hw.mm_flops_p;
}
double head_decode_compute(const Derived& d, const ModelShape& m, const HardwareProfile& hw,
                           const Policy& p) {
  return d.ngb * std::max(d.gbs * 2 * m.head_param_count / hw.mm_flops_g_at(p.gpu_batch_size),
                          m.head_param_count * m.weight_bytes / hw.device_mem_bdw);
}

}  // namespace

double throughput_bound(const ModelShape& model, const HardwareProfile& hw, const Policy& p,
                        const Workload& w, DecodeContext ctx_kind) {
  validate_policy(p);
  const Derived d = derive(model, p, w);
  const LayerCompute c = layer_compute(d, model, hw, p, decode_context(d, ctx_kind), true);
  // Every schedule's per-layer time is at least its compute (combine_* in estimate_cost), and
  // the link terms and the embeddings' moves are >= 0.
  const double t = d.l * c.prefill + head_prefill_compute(d, model, hw) +
                   (d.n - 1) * (d.l * c.decode + head_decode_compute(d, model, hw, p));
  return d.bls * d.n / t;
}

CostEstimate estimate_cost(const ModelShape& model, const HardwareProfile& hw, const Policy& p,
                           const Workload& w, DecodeContext ctx_kind) {
  return estimate_cost(model, hw, p, w, ctx_kind,
                       estimate_memory(model, p, w, hw.compute_device != ComputeDevice::Cpu));
}

CostEstimate estimate_cost(const ModelShape& model, const HardwareProfile& hw, const Policy& p,
                           const Workload& w, DecodeContext ctx_kind, const MemoryEstimate& mem) {
  validate_policy(p);
  const Derived d = derive(model, p, w);
  const double ab = model.act_bytes;
  const bool delegated = p.cpu_cache_compute;
  const bool cpu_hierarchy = hw.compute_device == ComputeDevice::Cpu;
  const double off_dev_cache = d.cc + d.cn;  // share of the KV not resident on the device
  const double ctx = decode_context(d, ctx_kind);
  const LayerCompute compute = layer_compute(d, model, hw, p, ctx, false);
  // Under compress_weight / compress_cache the weights and the KV move at their compressed
  // sizes (d.wl, d.kv_tok): FlexGen copies the compressed tensors between tiers.

  CostEstimate e;
  // ---- prefill, per layer ----
  {
    const double cache = d.bls * d.stored_p * (d.kv_tok + d.meta_tok);  // only kept slots
    const double hid = ab * d.s * d.h1 * d.bls;
    PhaseTerms& t = e.prefill;
    if (cpu_hierarchy) {
      // What the engine moves (engine/pipeline.cc): host-resident weights and
      // activations are computed on in place, as is a host-resident KV cache with
      // cpu_cache_compute; a KV home off the arena receives the whole slot array of each layer
      // and GPU batch from the workspace prefill computed it in (memcpy to host), and so does a
      // disk home (its base's first write covers every slot, engine/kv_log.h); disk weights are
      // read straight into the arena's workspace.
      const double slots = d.bls * d.slots * d.kv_tok;
      t.ctog = 0;
      t.gtoc = p.cpu_cache_compute ? 0 : slots * d.cc / hw.gtoc_bdw_cache;
      t.dtoc = d.wl * d.wn / hw.dtoc_bdw;
      t.ctod = slots * d.cn / hw.ctod_bdw_cache_p;
    } else {
      t.ctog = (d.wl * (d.wc + d.wn) + hid * (d.hc + d.hn)) / hw.ctog_bdw;
      t.gtoc = cache * off_dev_cache / hw.gtoc_bdw_cache + hid * (d.hc + d.hn) / hw.gtoc_bdw_hidden;
      t.dtoc = (d.wl * d.wn + hid * d.hn) / hw.dtoc_bdw;
      t.ctod = cache * d.cn / hw.ctod_bdw_cache_p + hid * d.hn / hw.ctod_bdw_hidden_p;
    }
    t.comp = compute.prefill;
    t.dequant = compute.prefill_dequant;
  }
  // ---- decode, per layer ----
  {
    const double slot = d.kv_tok + d.meta_tok;
    const double cache = d.bls * ctx * slot;          // KV read by one step
    const double new_kv = d.bls * slot;               // the slot one step writes
    const double scores = d.bls * ctx * d.score_tok;  // H2O scores rewritten every step
    const double hid = ab * d.h1 * d.bls;
    const double q_out = d.bls * ab * d.q_width;    // q or the attention output, one token
    const double kv_out = d.bls * ab * d.kv_width;  // k or v, one token
    PhaseTerms& t = e.decode;
    if (cpu_hierarchy) {
      // A host-resident cache without cpu_cache_compute is memcpy'd whole (allocated capacity)
      // into the arena and the changed slots copied back. Positions and scores stay in host
      // memory (no traffic).
      const double slots = d.bls * d.slots * d.kv_tok;
      const double changed = d.bls * d.kv_tok;
      t.ctog = delegated ? 0 : slots * d.cc / hw.ctog_bdw;
      t.gtoc = delegated ? 0 : changed * d.cc / hw.gtoc_bdw_cache;
      // A disk-resident one (engine/kv_log.h) is read as its filled slots — the context — and
      // its log, and a step's changed records are appended to the log as one write per (layer,
      // GPU batch): sequential bytes at the disk's rates, plus a request each (disk_write_op_s,
      // the per-request cost measured on writes, stands for reads too). The log and its
      // compactions add ≈ sqrt(2 W r) bytes a step, half read and half written (W the live
      // bytes, r an entry: the compaction rule's cost), or, in a run too short to compact, the
      // mean log r (n - 2) / 2 read.
      const double live = d.bls * ctx * d.kv_tok;
      const double steps = std::max(d.n - 1, 1.0);
      const bool compacts = std::sqrt(2 * live / changed) < steps;
      const double log_read =
          compacts ? std::sqrt(2 * live * changed) / 2 : changed * std::max(steps - 1, 0.0) / 2;
      const double log_write = compacts ? std::sqrt(2 * live * changed) / 2 : 0;
      const double kv_read =
          (live + log_read) * d.cn / hw.dtoc_bdw + 2 * d.ngb * d.cn * hw.disk_write_op_s;
      const double kv_write =
          (changed + log_write) * d.cn / hw.ctod_bdw_g + d.ngb * d.cn * hw.disk_write_op_s;
      t.dtoc = kv_read + d.wl * d.wn / hw.dtoc_bdw;
      t.ctod = kv_write;
      // The next visit's KV is read while this one computes (engine/schedule.cc), and the
      // write-back of a step is a few large requests: the disk's reads and writes (one device,
      // so their sum) overlap compute.
      t.unhidden = 0;
    } else {
      t.ctog = (d.wl * (d.wc + d.wn) + hid * (d.hc + d.hn)) / hw.ctog_bdw;
      t.gtoc = hid * (d.hc + d.hn) / hw.gtoc_bdw_hidden;
      if (delegated) {
        // Only q, k, v go to the host and the attention output comes back (FlexGen ignores
        // these).
        t.gtoc += (q_out + 2 * kv_out) * off_dev_cache / hw.gtoc_bdw_hidden;
        t.ctog += q_out * off_dev_cache / hw.ctog_bdw;
      } else {
        // The off-device KV (and scores) come to the device each step; the new slot goes back.
        t.ctog += (cache + scores) * off_dev_cache / hw.ctog_bdw;
        t.gtoc += (new_kv + scores) * off_dev_cache / hw.gtoc_bdw_cache;
      }
      t.dtoc = ((cache + scores) * d.cn + hid * d.hn) / hw.dtoc_bdw +
               d.wl * d.wn / (0.95 * hw.dtoc_bdw);  // FlexGen's 0.95: weight reads are strided
      t.ctod = ((new_kv + scores) * d.cn + hid * d.hn) / hw.ctod_bdw_g;
    }
    t.comp = compute.decode;
    t.dequant = compute.decode_dequant;
  }
  // ---- how the schedule combines the terms ----
  auto combine_prefill = [&](PhaseTerms& t) {
    if (!p.overlap) return t.ctog + t.gtoc + t.dtoc + t.ctod + t.comp;
    // On the CPU-only hierarchy host<->"device" copies are memcpy by the computing cores.
    if (cpu_hierarchy) return std::max({t.dtoc, t.ctod, t.comp + t.ctog + t.gtoc});
    return std::max({t.ctog + t.dtoc, t.gtoc + t.ctod, t.comp});  // FlexGen
  };
  auto combine_decode = [&](PhaseTerms& t) {
    if (!p.overlap) return t.ctog + t.gtoc + t.dtoc + t.ctod + t.comp;
    if (cpu_hierarchy) {
      return t.ctog + t.gtoc + t.unhidden + std::max({t.dtoc + t.ctod - t.unhidden, t.comp});
    }
    return t.ctog + std::max({t.gtoc, t.dtoc, t.ctod, t.comp});  // FlexGen
  };
  auto name_bottleneck = [](PhaseTerms& t) {
    const std::pair<double, const char*> terms[] = {
        {t.ctog, "ctog"}, {t.gtoc, "gtoc"}, {t.dtoc, "dtoc"}, {t.ctod, "ctod"}, {t.comp, "comp"}};
    t.bottleneck = std::max_element(std::begin(terms), std::end(terms))->second;
  };
  // Disk-resident activations: on the CPU-only hierarchy the engine reads and writes a GPU
  // batch's hidden states synchronously around each layer's compute (not overlapped).
  auto act_sync = [&](double rows) {
    if (!cpu_hierarchy) return 0.0;
    const double bytes = ab * rows * d.h1 * d.bls * d.hn;
    return bytes / hw.dtoc_bdw + bytes / hw.ctod_bdw_hidden_p;
  };
  e.prefill.per_layer = combine_prefill(e.prefill) + act_sync(d.s);
  e.decode.per_layer = combine_decode(e.decode) + act_sync(1);
  name_bottleneck(e.prefill);
  name_bottleneck(e.decode);

  // The LM head and embeddings, once per step; their weights move like a layer's (plain: they
  // are never compressed). On the CPU-only hierarchy host-resident embeddings are used in
  // place; disk-resident ones are read by both the input unit and the (tied) output head, so
  // twice per step.
  const double emb_move = cpu_hierarchy
                              ? 2 * d.emb * d.wn / hw.dtoc_bdw
                              : d.emb * (d.wc + d.wn) / hw.ctog_bdw + d.emb * d.wn / hw.dtoc_bdw;
  const double head_p = head_prefill_compute(d, model, hw) + emb_move;
  const double head_g = head_decode_compute(d, model, hw, p) + emb_move;

  e.prefill_s = d.l * e.prefill.per_layer + head_p;
  e.decode_s = (d.n - 1) * (d.l * e.decode.per_layer + head_g);
  e.total_s = e.prefill_s + e.decode_s;
  e.prefill_tok_s = d.bls * d.s / e.prefill_s;
  e.decode_tok_s = d.n > 1 ? d.bls * (d.n - 1) / e.decode_s : 0;
  e.total_tok_s = d.bls * d.n / e.total_s;
  e.peak_prefill = mem.prefill;
  e.peak_decode = mem.decode;
  e.peak = mem.peak;
  e.decode_kv_tokens = static_cast<int>(std::lround(ctx));
  e.kv_slots = static_cast<int>(d.slots);
  return e;
}

TierBytes capacities(const HardwareLimits& limits) {
  return {static_cast<double>(limits.device_mem), static_cast<double>(limits.host_mem),
          static_cast<double>(limits.disk_mem)};
}

TierBytes capacities(const HardwareProfile& hw, double fraction) {
  return {hw.device_mem * fraction, hw.host_mem * fraction, hw.disk_mem * fraction};
}

bool fits_within(const TierBytes& peak, const TierBytes& cap) {
  auto fits = [](double bytes, double budget) { return budget <= 0 || bytes <= budget; };
  return fits(peak.device, cap.device) && fits(peak.host, cap.host) && fits(peak.disk, cap.disk);
}

std::string memory_violation(const TierBytes& peak, const TierBytes& cap) {
  const std::pair<const char*, std::pair<double, double>> tiers[] = {
      {"device", {peak.device, cap.device}},
      {"host", {peak.host, cap.host}},
      {"disk", {peak.disk, cap.disk}}};
  for (const auto& [name, v] : tiers) {
    if (v.second > 0 && v.first > v.second) {
      return detail::concat(name, ": estimated peak ", format_bytes(v.first), " exceeds budget ",
                            format_bytes(v.second));
    }
  }
  return "";
}

void check_fits(const ModelShape& model, const Policy& p, const Workload& w,
                const HardwareLimits& limits, bool separate_device) {
  const MemoryEstimate m = estimate_memory(model, p, w, separate_device);
  const std::string why = memory_violation(m.peak, capacities(limits));
  H2OFLEX_INPUT_CHECK(why.empty(), "policy ", p.summary(), " does not fit ", model.name,
                      " (prompt ", w.prompt_len, ", gen ", w.gen_len, ", kv ", w.kv.summary(),
                      "): ", why, " (prefill device/host/disk ", format_bytes(m.prefill.device),
                      " / ", format_bytes(m.prefill.host), " / ", format_bytes(m.prefill.disk),
                      "; decode ", format_bytes(m.decode.device), " / ",
                      format_bytes(m.decode.host), " / ", format_bytes(m.decode.disk), ")");
}

}  // namespace h2oflex::policy
