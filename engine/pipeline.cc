#include "engine/pipeline.h"

#include <algorithm>
#include <iterator>

#include "engine/activations.h"
#include "engine/device_usage.h"
#include "engine/kv_home.h"
#include "engine/layer_step.h"
#include "engine/model_footprint.h"
#include "engine/pipeline_prepare.h"
#include "engine/pipeline_stage.h"
#include "engine/schedule.h"
#include "engine/stage_messages.h"
#include "engine/tier_set.h"
#include "engine/weight_stream.h"
#include "runtime/core/timer.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/scratch.h"

namespace h2oflex {

namespace {

class Pipeline final : public ScheduleHooks {
 public:
  // `prepared`: prepare_pipeline(spec), with its checks and the stages' agreement done.
  Pipeline(const PipelineSpec& spec, PreparedPipeline prepared);
  // Copies still queued (after an error) may touch the workspaces and the layout: they finish
  // before the parts that own those are destroyed.
  ~Pipeline() override { tiers_.quiesce(); }
  PipelineResult run();

  // ScheduleHooks.
  std::vector<TransferHandle> prefetch_weights(int unit) override {
    return weights_.prefetch(unit, phase_);
  }
  std::vector<TransferHandle> load_kv(int unit, int batch, int buf) override {
    return kv_.load(unit - 1, batch, buf, phase_);
  }
  void compute(int unit, int batch, int buf) override;
  void wait_kv_stores() override { kv_.wait_all_stores(); }
  void unit_done(int unit) override;

 private:
  // One step of every micro-block; `decode_follows`: a decode step comes next (its first KV
  // load can start during this one).
  void step(bool prefill, int decode_step, bool decode_follows);
  // Stages: the token ids the last stage chose are received by the others at the end of a step.
  // The token ids of micro-block m's batches, if they are still to come from the last stage.
  void receive_tokens(int m);
  void receive_all_tokens();
  void record_tokens(int batch, const std::vector<int32_t>& ids);
  bool staged() const { return stage_.stages > 1; }
  void compute_embedding(const UnitWeights& w, int batch, Tensor& hidden);
  void compute_head(const UnitWeights& w, int batch, const Tensor& hidden);
  void compute_layer(const UnitWeights& w, int layer, int batch, int buf, Tensor& hidden);
  void add_compute(int unit, double seconds);
  // Positions of the visit's rows (prompt rows in prefill, one token per sequence in decode).
  Tensor positions(int batch) const;
  std::vector<int32_t> pads(int batch) const;

  const PipelineSpec& spec_;
  const DecoderModel& model_;
  const PipelineStage stage_;
  RunShape shape_;
  int64_t gbs_, ngb_;
  int micro_blocks_;              // the block's parts; each is ngb_ / micro_blocks_ GPU batches
  std::vector<bool> tokens_due_;  // per micro-block: its last tokens are still to be received
  policy::MemoryPlan plan_;
  StageMessages messages_;
  DeviceUsageMeter gpu_usage_;  // before the tiers: its baseline is the card before the run
  TierSet tiers_;
  WeightStream weights_;
  KvHome kv_;
  Activations act_;
  Tensor prefill_k_, prefill_v_, colsum_, logits_;

  // The current step.
  bool prefill_ = true;
  bool last_micro_block_ = true;  // progress is reported once per step, on the last one
  int decode_step_ = 0;
  std::string phase_ = "prefill";
  KvPrefetch kv_prefetch_;  // the next step's first KV loads, queued by this one

  std::vector<std::vector<int32_t>> next_ids_;  // per batch, the tokens chosen last step
  std::vector<bool> done_;
  PipelineResult result_;
  double compute_s_ = 0;
  Stopwatch prefill_watch_;
  Stopwatch unit_watch_;  // since the previous unit of this step ended
};

Pipeline::Pipeline(const PipelineSpec& spec, PreparedPipeline prepared)
    : spec_(spec),
      model_(*spec.model),
      stage_(std::move(prepared.stage)),
      shape_(std::move(prepared.shape)),
      gbs_(spec.policy.gpu_batch_size),
      ngb_(spec.policy.num_gpu_batches),
      micro_blocks_(prepared.micro_blocks),
      plan_(std::move(prepared.plan)),
      messages_(spec.transport, spec.device_link, stage_),
      gpu_usage_(spec.device),
      tiers_(spec.device, plan_, spec.limits),
      weights_(model_, stage_, matrix_dtype_for(spec.gen.compute), plan_,
               WeightSourceSpec{spec.producer, spec.partial_producer, spec.packed_producer,
                                spec.weights_key, spec.policy.pin_weight,
                                weight_format_on_device(spec.policy.weight_format,
                                                        spec.device == PipelineDevice::Cuda)},
               tiers_),
      kv_(KvShape{stage_.layers(), ngb_, gbs_, model_.kv_geometry().kv_heads, shape_.slots,
                  model_.kv_geometry().head_dim, spec.gen.kv_dtype, spec.policy.kv_packing(),
                  std::min(shape_.slots, shape_.padded.seq), spec.kv_log_compact_every},
          plan_, tiers_),
      act_(model_.hidden(), plan_, tiers_) {
  const KvGeometry g = model_.kv_geometry();
  const int64_t s = shape_.padded.seq;
  auto dev_tensor = [&](Shape shape, const char* what) {
    const uint64_t n = static_cast<uint64_t>(shape_numel(shape)) * 4;
    return Tensor::wrap(tiers_.device().allocate(n, what), std::move(shape), DType::F32,
                        tiers_.compute_device());
  };
  prefill_k_ = dev_tensor({gbs_, s, g.kv_heads, g.head_dim}, "prefill K");
  prefill_v_ = dev_tensor({gbs_, s, g.kv_heads, g.head_dim}, "prefill V");
  colsum_ = dev_tensor({gbs_, g.kv_heads, s}, "column sums");
  logits_ = dev_tensor({gbs_, model_.vocab()}, "logits");
  const char* names[kTierKinds] = {"device", "host", "disk"};
  for (int t = 0; t < kTierKinds; ++t) result_.planned_bytes[names[t]] = plan_.bytes[t];
  if (spec.io_fault_hook) tiers_.transfers().set_fault_hook(spec.io_fault_hook);
}

std::vector<int32_t> Pipeline::pads(int batch) const {
  const auto& pad = shape_.padded.pad;
  return {pad.begin() + batch * gbs_, pad.begin() + (batch + 1) * gbs_};
}

Tensor Pipeline::positions(int batch) const {
  const Device dev = tiers_.compute_device();
  if (prefill_) {
    const int64_t s = shape_.padded.seq;
    return ops::scratch_copy(
        ops::Scratch::Positions,
        shape_.padded.positions.slice(batch * gbs_ * s, (batch + 1) * gbs_ * s), dev);
  }
  const int32_t t = static_cast<int32_t>(shape_.padded.seq + decode_step_);
  return ops::scratch_copy(ops::Scratch::Positions, decode_positions(pads(batch), t), dev);
}

void Pipeline::compute_embedding(const UnitWeights& w, int batch, Tensor& hidden) {
  const Device dev = tiers_.compute_device();
  Tensor ids;
  if (prefill_) {
    const int64_t s = shape_.padded.seq;
    ids = ops::scratch_copy(ops::Scratch::TokenIds,
                            shape_.padded.ids.slice(batch * gbs_ * s, (batch + 1) * gbs_ * s), dev);
  } else {
    Tensor host = Tensor::empty({gbs_}, DType::I32);
    for (int64_t i = 0; i < gbs_; ++i) host.data<int32_t>()[i] = next_ids_[batch][i];
    ids = ops::scratch_copy(ops::Scratch::TokenIds, host, dev);
  }
  model_.embed(w, spec_.gen.compute, ids, positions(batch), hidden);
}

void Pipeline::compute_head(const UnitWeights& w, int batch, const Tensor& hidden) {
  const Tensor last = last_positions(hidden, gbs_, prefill_ ? shape_.padded.seq : 1);
  model_.logits(w, spec_.gen.compute, last, logits_);
  const int64_t first_row = batch * gbs_;
  std::vector<int32_t> ids;
  choose_tokens(logits_, spec_.gen, first_row, prefill_ ? 0 : decode_step_ + 1, result_.tokens,
                ids);
  record_tokens(batch, ids);
  if (staged()) result_.stage_sent_bytes[phase_] += messages_.share_tokens(ids);
}

void Pipeline::record_tokens(int batch, const std::vector<int32_t>& ids) {
  const int64_t first_row = batch * gbs_;
  next_ids_[batch] = ids;
  const int32_t eos = model_.special_tokens().eos;
  for (int64_t i = 0; i < gbs_; ++i) {
    const size_t seq = static_cast<size_t>(first_row + i);
    if (done_[seq]) continue;
    result_.tokens[seq].push_back(ids[i]);
    if (spec_.gen.stop_at_eos && ids[i] == eos) done_[seq] = true;
  }
}

void Pipeline::receive_tokens(int m) {
  if (!tokens_due_[static_cast<size_t>(m)]) return;
  tokens_due_[static_cast<size_t>(m)] = false;
  std::vector<int32_t> ids(static_cast<size_t>(gbs_));
  const int per = static_cast<int>(ngb_) / micro_blocks_;
  for (int b = m * per; b < (m + 1) * per; ++b) {
    messages_.receive_tokens(ids);
    record_tokens(b, ids);
  }
}

void Pipeline::receive_all_tokens() {
  for (int m = 0; m < micro_blocks_; ++m) receive_tokens(m);
}

void Pipeline::compute_layer(const UnitWeights& w, int layer, int batch, int buf, Tensor& hidden) {
  const Device dev = tiers_.compute_device();
  const KvRule& rule = spec_.gen.eviction;
  if (prefill_) kv_.wait_stores(buf);  // decode waited when it loaded the buffer
  KvSlots slots = kv_.slots(layer, batch, buf);
  Stopwatch watch;
  const std::vector<int32_t> pad = pads(batch);
  const Tensor pos = positions(batch);
  if (prefill_) {
    Tensor* cs = rule.uses_attention_scores() ? &colsum_ : nullptr;
    prefill_layer(model_, w, spec_.gen.compute, hidden, gbs_, shape_.padded.seq, pad, pos,
                  prefill_k_, prefill_v_, rule, cs);
    kv_prefill(rule, prefill_k_, prefill_v_, cs, pad, slots);
    ops::synchronize(dev);  // the store below reads what the device wrote
    add_compute(layer + 1, watch.elapsed());
    kv_.store(layer, batch, buf, nullptr, phase_);
    return;
  }
  const int32_t t = static_cast<int32_t>(shape_.padded.seq + decode_step_);
  const ChangedSlots changed =
      decode_layer(model_, w, spec_.gen.compute, rule, t, pos, hidden, slots);
  ops::synchronize(dev);
  add_compute(layer + 1, watch.elapsed());
  kv_.store(layer, batch, buf, &changed, phase_);
}

void Pipeline::compute(int unit, int batch, int buf) {
  const int64_t rows = prefill_ ? gbs_ * shape_.padded.seq : gbs_;
  const bool receives = unit == stage_.first_unit() && !stage_.part.has_embedding;
  if (unit > 0 && !receives) act_.load(batch, rows, phase_);
  Tensor hidden = act_.hidden(batch, rows);
  if (receives) messages_.receive_hidden(hidden);
  Stopwatch watch;
  const std::unique_ptr<UnitWeights> bound = weights_.bind(unit);
  const UnitWeights& w = *bound;
  if (unit == 0) {
    compute_embedding(w, batch, hidden);
  } else if (unit == stage_.head_unit()) {
    compute_head(w, batch, hidden);
  } else {
    compute_layer(w, unit - 1, batch, buf, hidden);
    watch.reset();  // compute_layer timed its compute, without queuing its stores
  }
  ops::synchronize(tiers_.compute_device());  // timing, and the store below reads the result
  add_compute(unit, watch.elapsed());
  if (unit == stage_.last_unit() && !stage_.part.has_head) {
    result_.stage_sent_bytes[phase_] += messages_.send_hidden(hidden);
  } else if (unit < stage_.head_unit()) {
    act_.store(batch, rows, phase_);
  }
}

void Pipeline::add_compute(int unit, double seconds) {
  compute_s_ += seconds;
  result_.unit_compute_s[phase_].of(unit, stage_.head_unit()) += seconds;
}

void Pipeline::unit_done(int unit) {
  result_.unit_wall_s[phase_].of(unit, stage_.head_unit()) += unit_watch_.elapsed();
  unit_watch_.reset();
  if (!prefill_ || !spec_.on_progress || !last_micro_block_) return;
  spec_.on_progress({true, unit + 1, stage_.head_unit() + 1, prefill_watch_.elapsed(), 0});
}

void Pipeline::step(bool prefill, int decode_step, bool decode_follows) {
  prefill_ = prefill;
  decode_step_ = decode_step;
  phase_ = prefill ? "prefill" : "decode";
  StepShape s;
  s.units =
      StageUnits{stage_.first_unit(), stage_.last_unit(), 1, static_cast<int>(stage_.layers())};
  s.batches = static_cast<int>(ngb_) / micro_blocks_;
  s.prefill = prefill;
  s.overlap = spec_.policy.overlap;
  // Micro-block by micro-block: while this stage computes micro-block m, the next stage computes
  // m - 1. A stage other than the last needs micro-block m's tokens of the previous step only
  // when it starts m again (the embedding reads them), so it receives them then.
  for (int m = 0; m < micro_blocks_; ++m) {
    if (staged() && !stage_.last()) receive_tokens(m);
    s.first_batch = m * s.batches;
    last_micro_block_ = m + 1 == micro_blocks_;
    s.next_decode_first_batch.reset();
    if (!prefill && !last_micro_block_) s.next_decode_first_batch = s.first_batch + s.batches;
    if (!prefill && last_micro_block_ && decode_follows) s.next_decode_first_batch = 0;
    unit_watch_.reset();
    kv_prefetch_ = run_step(*this, s, std::move(kv_prefetch_));
    if (staged() && !stage_.last()) tokens_due_[static_cast<size_t>(m)] = true;
  }
}

PipelineResult Pipeline::run() {
  const size_t n = spec_.prompts.size();
  result_.tokens.assign(n, {});
  done_.assign(n, false);
  next_ids_.assign(static_cast<size_t>(ngb_), {});
  tokens_due_.assign(static_cast<size_t>(micro_blocks_), false);
  result_.micro_blocks = micro_blocks_;
  TransferEngine& xfer = tiers_.transfers();
  xfer.reset_counters();
  tiers_.reset_peaks();
  // Every stage has loaded its weights: the stages' clocks start together, so the first
  // stage's prefill does not count the time the others took to get ready.
  if (staged()) spec_.transport->barrier();

  Stopwatch watch;
  prefill_watch_.reset();
  const StageBusy start = busy_now(xfer, compute_s_);
  step(/*prefill=*/true, 0, /*decode_follows=*/false);
  result_.prefill_s = watch.elapsed();
  gpu_usage_.sample();
  const StageBusy after_prefill = busy_now(xfer, compute_s_);
  result_.stage_busy_s["prefill"] = busy_between(start, after_prefill);

  const int decode_steps = spec_.gen.gen_len - 1;
  const int to_run =
      spec_.projected_steps > 0 ? std::min(spec_.projected_steps, decode_steps) : decode_steps;
  watch.reset();
  for (int i = 0; i < to_run; ++i) {
    // Whether every sequence has ended needs every sequence's last token: stages stopping at
    // EOS meet at each step.
    if (spec_.gen.stop_at_eos && staged()) receive_all_tokens();
    if (spec_.gen.stop_at_eos &&
        std::all_of(done_.begin(), done_.end(), [](bool d) { return d; })) {
      break;
    }
    if (!staged() && spec_.gen.stop_requested && spec_.gen.stop_requested()) {
      result_.stopped = true;
      break;
    }
    step(/*prefill=*/false, i, /*decode_follows=*/i + 1 < to_run);
    ++result_.decode_steps_run;
    gpu_usage_.sample();
    if (spec_.on_progress) {
      const double el = watch.elapsed();
      spec_.on_progress({false, i + 1, to_run, el, static_cast<double>(n) * (i + 1) / el});
    }
  }
  // Every sequence ended at EOS before the step that load was for.
  for (TransferHandle& h : kv_prefetch_.handles) h.wait();
  for (TransferHandle& h : kv_prefetch_.second) h.wait();
  kv_prefetch_ = {};
  if (staged()) {
    receive_all_tokens();
    spec_.transport->wait_posted();
  }
  result_.decode_s = watch.elapsed();
  result_.stage_busy_s["decode"] = busy_between(after_prefill, busy_now(xfer, compute_s_));
  if (spec_.projected_steps > 0 && result_.decode_steps_run > 0 &&
      result_.decode_steps_run < decode_steps) {
    result_.projected = true;
    result_.decode_s *= static_cast<double>(decode_steps) / result_.decode_steps_run;
  }
  if (spec_.gen.capture_kept) result_.kept = kv_.kept();
  result_.kv_log_compactions = kv_.log_compactions();
  result_.bytes_moved = xfer.counters();
  result_.peak_bytes = tiers_.peaks();
  result_.gpu_used_at_start = gpu_usage_.used_at_start();
  result_.gpu_used_peak = gpu_usage_.peak_used();
  result_.gpu_total = gpu_usage_.total();
  return result_;
}

}  // namespace

policy::MemoryPlan plan_pipeline(const PipelineSpec& spec) {
  return plan_for(spec, stage_of(spec), run_shape(spec));
}

PipelineResult run_pipeline(const PipelineSpec& spec) {
  H2OFLEX_CHECK(spec.model != nullptr, "pipeline: no model");
  PreparedPipeline prepared = prepare_pipeline(spec);
  // Stages on one machine share the weight layout: stage 0 builds (or checks) it while the
  // others wait, then they open it — a barrier before their pipelines are built, one after
  // stage 0's.
  const bool staged = prepared.stage.stages > 1, first = prepared.stage.first();
  if (staged && !first) spec.transport->barrier();
  Pipeline p(spec, std::move(prepared));
  if (staged && first) spec.transport->barrier();  // the layout is ready
  return p.run();
}

}  // namespace h2oflex
