#include "engine/pipeline.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "offload/tiers/cuda_device_tier.h"
#include "offload/tiers/disk_tier.h"
#include "offload/tiers/memory_tier.h"
#include "offload/weights/home_tiers.h"
#include "runtime/core/timer.h"
#include "engine/device_pinning.h"
#include "engine/layer_step.h"
#include "runtime/ops/scratch.h"

namespace h2oflex {

namespace {

constexpr uint64_t kUnlimited = ~uint64_t{0} >> 2;

uint64_t round_up(uint64_t n, uint64_t a) {
  return (n + a - 1) / a * a;
}

// A byte range in some tier: a pointer for memory tiers, an offset for the disk tier.
struct Home {
  TierKind kind = TierKind::Host;
  void* ptr = nullptr;
  uint64_t offset = 0;
  bool in_layout = false;  // a disk offset in the weight layout's file, not the disk tier's
};

struct TensorHome {
  Home home;
  Shape shape;
  DType dtype;
  uint64_t bytes;
};

// Everything the run allocates, so the plan can be checked against budgets before any work.
struct Plan {
  uint64_t bytes[3] = {0, 0, 0};  // device, host, disk
  void add(TierKind k, uint64_t n) { bytes[static_cast<int>(k)] += n; }
};

class Pipeline {
 public:
  explicit Pipeline(const PipelineSpec& spec);
  ~Pipeline() {
    // The transfer engine first: it finishes queued copies and unpins its bounce buffers while
    // the pin listener still exists.
    xfer_.reset();
    if (device_pins_) host_->remove_pin_listener(device_pins_.get());
  }
  PipelineResult run();

 private:
  // Layer units: 0 = input embedding, 1..L = decoder layers, L + 1 = output head.
  int units() const { return static_cast<int>(cfg_.layers) + 2; }
  bool is_decoder(int unit) const { return unit >= 1 && unit <= cfg_.layers; }

  void plan_and_allocate();
  void place_weights();
  void check_disk_room(const std::string& layout_dir) const;
  void allocate_kv_and_activations();
  std::vector<TensorHome> unit_tensors(int unit) const;

  // Weight prefetch of `unit` into workspace buffer unit % 2; returns the handles to wait for.
  std::vector<TransferHandle> load_weights(int unit, const std::string& phase);
  std::vector<Tensor> bind_weights(int unit) const;
  // The input and output units each hold part of the embedding tensors: bind them by name.
  OptEmbeddingWeights bind_embedding_unit(int unit, const std::vector<Tensor>& w) const;

  // KV of (layer, batch) into the visit's workspace buffer when not computed in place.
  bool kv_in_place(int layer) const;
  std::vector<TransferHandle> load_cache(int layer, int batch, int buf, const std::string& phase);
  KvSlots slots_for(int layer, int batch, int buf) const;
  void wait_stores(int buf);
  std::vector<TransferHandle> store_cache(int layer, int batch, int buf,
                                          const ChangedSlots* changed, const std::string& phase);

  Tensor hidden_of(int batch, int64_t rows);
  void step(bool prefill, int decode_step);
  void compute(int unit, int batch, bool prefill, int decode_step);

  Location loc(const Home& h) const;
  Location loc_ptr(TierKind kind, void* p) const;

  // The device tier is separate memory (a GPU's, or the isolated CPU arena): the compute side
  // only touches device memory, so host-resident weights and activations are staged into
  // device workspaces like disk-resident ones.
  bool staged(TierKind home) const {
    return home == TierKind::Disk || (separate_ && home == TierKind::Host);
  }
  // Tensors in a tier's memory are tagged with the device that computes on them.
  Device tensor_device(TierKind tier) const {
    return tier == TierKind::Device ? dev_ : Device::CPU;
  }
  // Where a layer's slot positions and scores live: with the attention that reads them.
  TierKind meta_tier(TierKind kv_home) const;

  PipelineSpec spec_;
  const OptConfig& cfg_;
  const policy::Policy& pol_;
  int64_t gbs_, ngb_, heads_, d_, cap_;
  PaddedBatch padded_;
  bool separate_;  // device tier not host-addressable
  Device dev_;     // tag of tensors in device-tier memory

  std::unique_ptr<MemoryTier> device_;
  std::unique_ptr<HostTier> host_;
  std::unique_ptr<DiskTier> disk_;
  std::unique_ptr<TransferEngine> xfer_;
  std::unique_ptr<PinListener> device_pins_;
  std::string disk_path_;
  std::unique_ptr<WeightLayout> layout_;
  std::vector<bool> weight_verified_;  // per spec: checksum checked on a first read
  Plan plan_;

  std::vector<WeightSpec> specs_;
  std::vector<TensorHome> weight_home_;          // per spec
  std::vector<std::vector<size_t>> unit_specs_;  // spec indices per unit
  uint64_t weight_ws_bytes_ = 0;
  void* weight_ws_[2] = {nullptr, nullptr};
  // Per unit, per tensor of the unit: offset inside a workspace buffer (the tied token table
  // appears in two units, at different offsets).
  std::vector<std::vector<uint64_t>> weight_ws_offset_;

  struct KvHome {
    TierKind kind;
    Home k, v;          // bulk K and V storage
    Tensor pos, score;  // metadata, always addressable (host, or device for device homes)
  };
  std::vector<KvHome> kv_;  // [layer * ngb + batch]
  uint64_t kv_bytes_ = 0;   // bytes of K (or V) of one (layer, batch)
  void* kv_ws_[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};  // [buf][k/v]
  std::vector<TransferHandle> kv_store_pending_[2];

  struct ActHome {
    TierKind kind;
    Home home;
    Tensor tensor;  // valid for memory homes
  };
  std::vector<ActHome> act_;
  uint64_t act_bytes_ = 0;
  Tensor act_ws_;  // compute copy for disk-homed activations
  Tensor logits_;
  Tensor prefill_k_, prefill_v_, colsum_;

  std::vector<std::vector<int32_t>> next_ids_;  // per batch, the tokens chosen last step
  std::vector<bool> done_;
  PipelineResult result_;
  double compute_s_ = 0;
  Stopwatch prefill_watch_;
};

Pipeline::Pipeline(const PipelineSpec& spec)
    : spec_(spec),
      cfg_(spec_.cfg),
      pol_(spec_.policy),
      separate_(spec.device != PipelineDevice::Cpu),
      dev_(spec.device == PipelineDevice::Cuda ? Device::CUDA : Device::CPU) {
#ifndef H2OFLEX_WITH_CUDA
  H2OFLEX_INPUT_CHECK(spec_.device != PipelineDevice::Cuda,
                      "compute device 'cuda' requested, but this build has no CUDA backend");
#endif
  policy::validate_policy(pol_);
  gbs_ = pol_.gpu_batch_size;
  ngb_ = pol_.num_gpu_batches;
  heads_ = cfg_.heads;
  d_ = cfg_.head_dim();
  H2OFLEX_INPUT_CHECK(static_cast<int64_t>(spec_.prompts.size()) == gbs_ * ngb_,
                      "pipeline: ", spec_.prompts.size(), " prompts for a block of ", gbs_, " x ",
                      ngb_);
  padded_ = pad_prompts(spec_.prompts, cfg_.pad_id);
  cap_ = spec_.gen.eviction.capacity(static_cast<int>(padded_.seq), spec_.gen.gen_len);
  H2OFLEX_INPUT_CHECK(padded_.seq + spec_.gen.gen_len <= cfg_.max_positions, "prompt (",
                      padded_.seq, ") + gen_len (", spec_.gen.gen_len, ") exceeds the model's ",
                      cfg_.max_positions, " positions");
  specs_ = opt_weight_specs(cfg_);
}

TierKind Pipeline::meta_tier(TierKind kv_home) const {
  if (kv_home == TierKind::Device) return TierKind::Device;
  if (pol_.cpu_cache_compute) return TierKind::Host;  // the host computes this attention
  // The device computes it on a workspace copy of the slots; on the CPU-only hierarchy the
  // host memory is equally close, and keeps the arena free for weights.
  return separate_ ? TierKind::Device : TierKind::Host;
}

Location Pipeline::loc(const Home& h) const {
  switch (h.kind) {
    case TierKind::Device:
      return Location::in_memory(*device_, h.ptr);
    case TierKind::Host:
      return Location::in_memory(*host_, h.ptr);
    case TierKind::Disk:
      return h.in_layout ? Location::in_file(layout_->file(), h.offset)
                         : Location::on_disk(*disk_, h.offset);
  }
  return {};
}

Location Pipeline::loc_ptr(TierKind kind, void* p) const {
  return Location::in_memory(kind == TierKind::Device ? static_cast<MemoryTier&>(*device_)
                                                      : static_cast<MemoryTier&>(*host_),
                             p);
}

void Pipeline::plan_and_allocate() {
  const auto& lim = spec_.limits;
  const uint64_t kv_elem = dtype_size(spec_.gen.kv_dtype);
  const DType wdtype = spec_.gen.compute == ops::ComputeType::BF16 ? DType::BF16 : DType::F32;
  // Weights: home tiers by FlexGen's cumulative rule over the tensors in execution order.
  std::vector<uint64_t> sizes;
  for (const auto& s : specs_) {
    const DType dt = s.role == WeightRole::Matrix ? wdtype : DType::F32;
    sizes.push_back(static_cast<uint64_t>(shape_numel(s.shape)) * dtype_size(dt));
  }
  const TierShares wshares{pol_.w_gpu, pol_.w_cpu, pol_.w_disk()};
  const std::vector<TierKind> whome = assign_home_tiers(sizes, wshares);
  weight_home_.resize(specs_.size());
  for (size_t i = 0; i < specs_.size(); ++i) {
    weight_home_[i].home.kind = whome[i];
    weight_home_[i].shape = specs_[i].shape;
    weight_home_[i].dtype = specs_[i].role == WeightRole::Matrix ? wdtype : DType::F32;
    weight_home_[i].bytes = sizes[i];
    plan_.add(whome[i], round_up(sizes[i], 4096));
  }
  // Units and the workspace that holds one unit's disk-resident weights (double-buffered).
  unit_specs_.assign(static_cast<size_t>(units()), {});
  for (size_t i = 0; i < specs_.size(); ++i) {
    const auto& s = specs_[i];
    if (s.layer >= 0) {
      unit_specs_[s.layer + 1].push_back(i);
    } else if (s.name == "decoder.embed_tokens.weight") {
      unit_specs_[0].push_back(i);
      unit_specs_[units() - 1].push_back(i);  // tied lm_head
    } else if (s.name == "decoder.embed_positions.weight" ||
               s.name == "decoder.project_in.weight") {
      unit_specs_[0].push_back(i);
    } else {
      unit_specs_[units() - 1].push_back(i);
    }
  }
  weight_ws_offset_.assign(unit_specs_.size(), {});
  for (size_t u = 0; u < unit_specs_.size(); ++u) {
    uint64_t off = 0;
    for (size_t i : unit_specs_[u]) {
      weight_ws_offset_[u].push_back(off);
      if (staged(weight_home_[i].home.kind)) off += round_up(sizes[i], 4096);
    }
    weight_ws_bytes_ = std::max(weight_ws_bytes_, off);
  }
  plan_.add(TierKind::Device, 2 * weight_ws_bytes_);

  // KV: each layer's cache goes to a tier by the cumulative rule over layers.
  kv_bytes_ = round_up(static_cast<uint64_t>(gbs_ * heads_ * cap_ * d_) * kv_elem, 4096);
  const uint64_t meta_bytes = round_up(static_cast<uint64_t>(gbs_ * heads_ * cap_) * 4, 4096);
  const std::vector<uint64_t> layer_sizes(static_cast<size_t>(cfg_.layers), 1);
  const std::vector<TierKind> kvhome =
      assign_home_tiers(layer_sizes, TierShares{pol_.cache_gpu, pol_.cache_cpu, pol_.cache_disk()});
  bool need_kv_ws = false;
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    const TierKind k = kvhome[l];
    plan_.add(k, 2 * kv_bytes_ * static_cast<uint64_t>(ngb_));
    plan_.add(meta_tier(k), 2 * meta_bytes * static_cast<uint64_t>(ngb_));
    if (!(k == TierKind::Device || (k == TierKind::Host && pol_.cpu_cache_compute))) {
      need_kv_ws = true;
    }
    for (int64_t b = 0; b < ngb_; ++b) kv_.push_back(KvHome{k, {k}, {k}, {}, {}});
  }
  const TierKind kv_ws_tier = pol_.cpu_cache_compute ? TierKind::Host : TierKind::Device;
  if (need_kv_ws) plan_.add(kv_ws_tier, 4 * kv_bytes_);
  // A separate device builds a delegated cache's prefill slots in its own memory first
  // (kv_prefill's staging), then copies them to the host.
  const bool delegated_somewhere = std::any_of(
      kv_.begin(), kv_.end(), [](const KvHome& h) { return h.kind != TierKind::Device; });
  if (separate_ && pol_.cpu_cache_compute && delegated_somewhere) {
    plan_.add(TierKind::Device, 2 * kv_bytes_ + 2 * meta_bytes);
  }

  // Activations: each GPU batch's hidden states go to a tier by the cumulative rule.
  act_bytes_ = round_up(static_cast<uint64_t>(gbs_ * padded_.seq * cfg_.hidden) * 4, 4096);
  const std::vector<uint64_t> batch_sizes(static_cast<size_t>(ngb_), 1);
  const std::vector<TierKind> acthome =
      assign_home_tiers(batch_sizes, TierShares{pol_.act_gpu, pol_.act_cpu, pol_.act_disk()});
  bool need_act_ws = false;
  for (int64_t b = 0; b < ngb_; ++b) {
    plan_.add(acthome[b], act_bytes_);
    act_.push_back(ActHome{acthome[b], {acthome[b]}, {}});
    need_act_ws = need_act_ws || staged(acthome[b]);
  }
  if (need_act_ws) plan_.add(TierKind::Device, act_bytes_);
  // Prefill scratch on the compute device: K, V and column sums of one GPU batch, and logits.
  const uint64_t prefill_scratch =
      2 * round_up(static_cast<uint64_t>(gbs_ * padded_.seq * cfg_.hidden) * 4, 4096) +
      round_up(static_cast<uint64_t>(gbs_ * heads_ * padded_.seq) * 4, 4096) +
      round_up(static_cast<uint64_t>(gbs_ * cfg_.vocab) * 4, 4096);
  plan_.add(TierKind::Device, prefill_scratch);
  if (separate_) {
    // The layers' working buffers (ops/scratch.h) live on the device too: LayerNorm output,
    // projections, queries, attention output and embeddings per prompt row, plus the MLP's.
    const uint64_t rows = static_cast<uint64_t>(gbs_ * padded_.seq);
    const int64_t embed = cfg_.has_projections() ? cfg_.word_embed_dim : 0;
    plan_.add(TierKind::Device,
              rows * static_cast<uint64_t>(4 * cfg_.hidden + cfg_.ffn + embed) * 4);
  }

  // Refuse a plan over budget before allocating anything, with the estimate.
  const uint64_t budgets[3] = {lim.device_mem ? lim.device_mem : kUnlimited,
                               lim.host_mem ? lim.host_mem : kUnlimited,
                               lim.disk_mem ? lim.disk_mem : kUnlimited};
  const char* names[3] = {"device", "host", "disk"};
  std::string over;
  for (int t = 0; t < 3; ++t) {
    result_.planned_bytes[names[t]] = plan_.bytes[t];
    if (plan_.bytes[t] > budgets[t]) {
      over += detail::concat(over.empty() ? "" : "; ", names[t], " needs an estimated ",
                             plan_.bytes[t] / 1048576.0, " MiB but its budget is ",
                             budgets[t] / 1048576.0, " MiB");
    }
  }
  H2OFLEX_INPUT_CHECK(over.empty(), "policy ", pol_.summary(), " does not fit: ", over);
  std::string disk_path = lim.disk_path;
  if (plan_.bytes[2] > 0 && disk_path.empty()) {
    disk_path = std::filesystem::temp_directory_path().string();
    std::fprintf(stderr, "disk tier: hardware.disk_path not set, using %s\n", disk_path.c_str());
  }

  switch (spec_.device) {
    case PipelineDevice::Cpu:
      device_ = std::make_unique<CpuDeviceTier>(budgets[0]);
      break;
    case PipelineDevice::CpuIsolated:
      device_ = std::make_unique<CpuDeviceTier>(budgets[0], 4096, /*host_addressable=*/false);
      break;
    case PipelineDevice::Cuda:
#ifdef H2OFLEX_WITH_CUDA
      device_ = std::make_unique<CudaDeviceTier>(budgets[0]);
#endif
      break;
  }
  host_ = std::make_unique<HostTier>(budgets[1]);
  if (plan_.bytes[2] > 0) disk_ = std::make_unique<DiskTier>(disk_path, budgets[2]);
  disk_path_ = disk_path;
  xfer_ = std::make_unique<TransferEngine>();
  xfer_->use_pinned_memory(*host_);
  device_pins_ = make_device_pin_listener();  // GPU builds: pinned for DMA as well
  if (device_pins_) {
    host_->add_pin_listener(device_pins_.get());
    xfer_->pin_bounce_buffers(*device_pins_);  // disk <-> GPU copies stage through them
  }

  if (weight_ws_bytes_ > 0) {
    for (auto& w : weight_ws_) w = device_->allocate(weight_ws_bytes_, "weight workspace");
  }
  if (need_kv_ws) {
    MemoryTier& t = kv_ws_tier == TierKind::Host ? static_cast<MemoryTier&>(*host_)
                                                 : static_cast<MemoryTier&>(*device_);
    for (auto& buf : kv_ws_) {
      for (auto& p : buf) p = t.allocate(kv_bytes_, "KV workspace");
    }
  }
  if (need_act_ws) {
    act_ws_ = Tensor::wrap(device_->allocate(act_bytes_, "activation workspace"),
                           {static_cast<int64_t>(act_bytes_ / 4)}, DType::F32, dev_);
  }
  auto dev_tensor = [&](Shape shape, const char* what) {
    const uint64_t n = static_cast<uint64_t>(shape_numel(shape)) * 4;
    return Tensor::wrap(device_->allocate(n, what), std::move(shape), DType::F32, dev_);
  };
  prefill_k_ = dev_tensor({gbs_, padded_.seq, heads_, d_}, "prefill K");
  prefill_v_ = dev_tensor({gbs_, padded_.seq, heads_, d_}, "prefill V");
  colsum_ = dev_tensor({gbs_, heads_, padded_.seq}, "column sums");
  logits_ = dev_tensor({gbs_, cfg_.vocab}, "logits");
}

// Refuses, before writing anything, a layout that the disk cannot hold (an existing layout of
// the same size is reused, so it needs no new room).
void Pipeline::check_disk_room(const std::string& layout_dir) const {
  namespace fs = std::filesystem;
  uint64_t needed = 0;
  for (const auto& w : weight_home_) needed += round_up(w.bytes, 4096);
  const fs::path data = fs::path(layout_dir) / WeightLayout::kDataFile;
  std::error_code ec;
  const uint64_t existing = fs::exists(data, ec) ? fs::file_size(data, ec) : 0;
  const uint64_t fresh = needed > existing ? needed - existing : 0;
  const fs::space_info space = fs::space(disk_path_, ec);
  if (!ec && fresh > space.available) {
    throw InputError(detail::concat(
        "the weights need ", needed / 1073741824.0, " GiB on disk (", fresh / 1073741824.0,
        " GiB new) at ", disk_path_, " but only ", space.available / 1073741824.0,
        " GiB are free: free some space or point hardware.disk_path elsewhere"));
  }
}

void Pipeline::place_weights() {
  bool any_disk = false;
  for (const auto& w : weight_home_) any_disk = any_disk || w.home.kind == TierKind::Disk;
  const DType wdtype = spec_.gen.compute == ops::ComputeType::BF16 ? DType::BF16 : DType::F32;
  if (any_disk) {
    // Disk-resident weights are read from the offload layout in place; memory-resident ones are
    // read from it once (faster than producing them again).
    H2OFLEX_CHECK(!spec_.weights_key.empty(), "pipeline: weights on disk need a weights_key");
    const std::string dir = model_layout_dir(disk_path_, spec_.weights_key, wdtype);
    check_disk_room(dir);
    layout_ = open_or_build_model_layout(dir, spec_.weights_key, cfg_, wdtype, spec_.producer,
                                         spec_.partial_producer);
  }
  weight_verified_.assign(specs_.size(), false);
  for (size_t i = 0; i < specs_.size(); ++i) {
    TensorHome& w = weight_home_[i];
    if (w.home.kind == TierKind::Disk) {
      w.home.offset = layout_->record(layout_->find(specs_[i].name)).offset;
      w.home.in_layout = true;
      disk_->charge(w.bytes, specs_[i].name);  // the layout file counts against the budget
      continue;
    }
    w.home.ptr = w.home.kind == TierKind::Device ? device_->allocate(w.bytes, specs_[i].name)
                 : pol_.pin_weight               ? host_->allocate_pinned(w.bytes, specs_[i].name)
                                                 : host_->allocate(w.bytes, specs_[i].name);
    if (layout_) {
      Home src{TierKind::Disk, nullptr, layout_->record(layout_->find(specs_[i].name)).offset,
               true};
      xfer_->copy_sync(loc(src), loc(w.home), w.bytes, {"load", DataKind::Weight});
    } else if (w.home.kind == TierKind::Device && separate_) {
      // The producer writes host memory; device memory is filled by a copy.
      Tensor host = Tensor::empty({static_cast<int64_t>((w.bytes + 3) / 4)}, DType::F32);
      spec_.producer(specs_[i], w.dtype, host.raw());
      device_->copy_from_host(w.home.ptr, host.raw(), w.bytes);
    } else {
      spec_.producer(specs_[i], w.dtype, w.home.ptr);
    }
  }
}

void Pipeline::allocate_kv_and_activations() {
  const uint64_t meta_elems = static_cast<uint64_t>(gbs_ * heads_ * cap_);
  for (auto& kv : kv_) {
    for (Home* h : {&kv.k, &kv.v}) {
      if (kv.kind == TierKind::Disk) {
        h->offset = disk_->allocate(kv_bytes_, "KV cache");
      } else {
        MemoryTier& t = kv.kind == TierKind::Device ? static_cast<MemoryTier&>(*device_)
                                                    : static_cast<MemoryTier&>(*host_);
        h->ptr = t.allocate(kv_bytes_, "KV cache");
      }
    }
    const TierKind meta_home = meta_tier(kv.kind);
    MemoryTier& mt = meta_home == TierKind::Device ? static_cast<MemoryTier&>(*device_)
                                                   : static_cast<MemoryTier&>(*host_);
    const Shape meta{gbs_, heads_, cap_};
    const Device md = tensor_device(meta_home);
    kv.pos = Tensor::wrap(mt.allocate(meta_elems * 4, "KV positions"), meta, DType::I32, md);
    kv.score = Tensor::wrap(mt.allocate(meta_elems * 4, "KV scores"), meta, DType::F32, md);
    ops::fill(kv.pos, -1.0f);
    ops::fill(kv.score, 0.0f);
  }
  for (auto& a : act_) {
    if (a.kind == TierKind::Disk) {
      a.home.offset = disk_->allocate(act_bytes_, "activations");
    } else {
      MemoryTier& t = a.kind == TierKind::Device ? static_cast<MemoryTier&>(*device_)
                                                 : static_cast<MemoryTier&>(*host_);
      a.home.ptr = t.allocate(act_bytes_, "activations");
      a.tensor = Tensor::wrap(a.home.ptr, {static_cast<int64_t>(act_bytes_ / 4)}, DType::F32,
                              tensor_device(a.kind));
    }
  }
}

std::vector<TransferHandle> Pipeline::load_weights(int unit, const std::string& phase) {
  std::vector<TransferHandle> handles;
  for (size_t j = 0; j < unit_specs_[unit].size(); ++j) {
    const TensorHome& w = weight_home_[unit_specs_[unit][j]];
    if (!staged(w.home.kind)) continue;
    void* dst = static_cast<char*>(weight_ws_[unit % 2]) + weight_ws_offset_[unit][j];
    // The first read of each tensor from the layout checks its checksum (on the I/O thread, off
    // the critical path); later reads of the same bytes skip it.
    std::function<void()> verify;
    const size_t spec_index = unit_specs_[unit][j];
    if (w.home.kind == TierKind::Disk && !weight_verified_[spec_index]) {
      weight_verified_[spec_index] = true;
      const WeightRecord* record = &layout_->record(layout_->find(specs_[spec_index].name));
      verify = [this, record, dst, bytes = w.bytes] {
        if (device_->is_host_addressable()) {
          check_weight_checksum(*record, layout_->file().path(), dst);
          return;
        }
        Tensor host = Tensor::empty({static_cast<int64_t>((bytes + 3) / 4)}, DType::F32);
        device_->copy_to_host(host.raw(), dst, bytes);
        check_weight_checksum(*record, layout_->file().path(), host.raw());
      };
    }
    handles.push_back(xfer_->copy(QueueId::WeightLoad, loc(w.home), loc_ptr(TierKind::Device, dst),
                                  w.bytes, {phase, DataKind::Weight}, std::move(verify)));
  }
  return handles;
}

std::vector<Tensor> Pipeline::bind_weights(int unit) const {
  std::vector<Tensor> out;
  for (size_t j = 0; j < unit_specs_[unit].size(); ++j) {
    const TensorHome& w = weight_home_[unit_specs_[unit][j]];
    const bool in_workspace = staged(w.home.kind);
    void* p = in_workspace ? static_cast<char*>(weight_ws_[unit % 2]) + weight_ws_offset_[unit][j]
                           : w.home.ptr;
    const Device d = in_workspace ? dev_ : tensor_device(w.home.kind);
    out.push_back(Tensor::wrap(p, w.shape, w.dtype, d));
  }
  return out;
}

OptEmbeddingWeights Pipeline::bind_embedding_unit(int unit, const std::vector<Tensor>& w) const {
  OptEmbeddingWeights e;
  size_t i = 0;
  for (size_t spec_index : unit_specs_[unit]) {
    const std::string& n = specs_[spec_index].name;
    if (n == "decoder.embed_tokens.weight") e.tokens = w[i];
    if (n == "decoder.embed_positions.weight") e.positions = w[i];
    if (n == "decoder.project_in.weight") e.project_in = w[i];
    if (n == "decoder.project_out.weight") e.project_out = w[i];
    if (n == "decoder.final_layer_norm.weight") e.final_ln_w = w[i];
    if (n == "decoder.final_layer_norm.bias") e.final_ln_b = w[i];
    ++i;
  }
  return e;
}

bool Pipeline::kv_in_place(int layer) const {
  const TierKind k = kv_[static_cast<size_t>(layer * ngb_)].kind;
  return k == TierKind::Device || (k == TierKind::Host && pol_.cpu_cache_compute);
}

std::vector<TransferHandle> Pipeline::load_cache(int layer, int batch, int buf,
                                                 const std::string& phase) {
  std::vector<TransferHandle> handles;
  if (kv_in_place(layer)) return handles;
  wait_stores(buf);  // the buffer's previous store must finish before new data lands in it
  const KvHome& kv = kv_[static_cast<size_t>(layer * ngb_ + batch)];
  const TierKind ws = pol_.cpu_cache_compute ? TierKind::Host : TierKind::Device;
  handles.push_back(xfer_->copy(QueueId::CacheLoad, loc(kv.k), loc_ptr(ws, kv_ws_[buf][0]),
                                kv_bytes_, {phase, DataKind::Kv}));
  handles.push_back(xfer_->copy(QueueId::CacheLoad, loc(kv.v), loc_ptr(ws, kv_ws_[buf][1]),
                                kv_bytes_, {phase, DataKind::Kv}));
  return handles;
}

void Pipeline::wait_stores(int buf) {
  for (auto& h : kv_store_pending_[buf]) h.wait();
  kv_store_pending_[buf].clear();
}

KvSlots Pipeline::slots_for(int layer, int batch, int buf) const {
  const KvHome& kv = kv_[static_cast<size_t>(layer * ngb_ + batch)];
  const Shape shape{gbs_, heads_, cap_, d_};
  KvSlots s;
  const bool in_place = kv_in_place(layer);
  void* kp = in_place ? kv.k.ptr : kv_ws_[buf][0];
  void* vp = in_place ? kv.v.ptr : kv_ws_[buf][1];
  const TierKind ws = pol_.cpu_cache_compute ? TierKind::Host : TierKind::Device;
  const Device d = tensor_device(in_place ? kv.kind : ws);
  s.k = Tensor::wrap(kp, shape, spec_.gen.kv_dtype, d);
  s.v = Tensor::wrap(vp, shape, spec_.gen.kv_dtype, d);
  s.pos = kv.pos;
  s.score = kv.score;
  return s;
}

std::vector<TransferHandle> Pipeline::store_cache(int layer, int batch, int buf,
                                                  const ChangedSlots* changed,
                                                  const std::string& phase) {
  std::vector<TransferHandle> handles;
  if (kv_in_place(layer)) return handles;
  const KvHome& kv = kv_[static_cast<size_t>(layer * ngb_ + batch)];
  const TierKind ws = pol_.cpu_cache_compute ? TierKind::Host : TierKind::Device;
  const uint64_t record = static_cast<uint64_t>(d_) * dtype_size(spec_.gen.kv_dtype);
  const uint64_t used = static_cast<uint64_t>(gbs_ * heads_ * cap_) * record;
  // Byte ranges to write: everything after prefill; after a decode step only the changed slot
  // records — rounded out to whole pages when the home is the disk, merged when adjacent.
  TransferEngine::Ranges ranges;
  if (changed == nullptr) {
    ranges.emplace_back(0, used);
  } else {
    // The disk's direct-I/O block (often 512 bytes), not the tier's 4 KiB allocation unit.
    const uint64_t gran = kv.kind == TierKind::Disk ? disk_->file().block() : record;
    std::set<uint64_t> units;
    for (size_t bh = 0; bh < changed->size(); ++bh) {
      const int32_t slot = (*changed)[bh];
      if (slot < 0) continue;
      const uint64_t begin = (bh * static_cast<uint64_t>(cap_) + slot) * record;
      for (uint64_t u = begin / gran; u <= (begin + record - 1) / gran; ++u) units.insert(u);
    }
    for (uint64_t u : units) {
      const uint64_t b = u * gran, e = std::min((u + 1) * gran, kv_bytes_);
      if (!ranges.empty() && ranges.back().first + ranges.back().second == b) {
        ranges.back().second += e - b;
      } else {
        ranges.emplace_back(b, e - b);
      }
    }
  }
  for (int which = 0; which < 2; ++which) {
    const Home& home = which == 0 ? kv.k : kv.v;
    handles.push_back(xfer_->copy_ranges(QueueId::CacheStore, loc_ptr(ws, kv_ws_[buf][which]),
                                         loc(home), ranges, {phase, DataKind::Kv}));
  }
  kv_store_pending_[buf].insert(kv_store_pending_[buf].end(), handles.begin(), handles.end());
  return handles;
}

Tensor Pipeline::hidden_of(int batch, int64_t rows) {
  ActHome& a = act_[static_cast<size_t>(batch)];
  Tensor base = staged(a.kind) ? act_ws_ : a.tensor;
  return base.slice(0, rows * cfg_.hidden).reshape({rows, cfg_.hidden});
}

void Pipeline::compute(int unit, int batch, bool prefill, int decode_step) {
  const int64_t s = padded_.seq;
  const int64_t rows = prefill ? gbs_ * s : gbs_;
  const ops::ComputeType ct = spec_.gen.compute;
  const std::string phase = prefill ? "prefill" : "decode";
  ActHome& act = act_[static_cast<size_t>(batch)];
  const uint64_t act_used = static_cast<uint64_t>(rows * cfg_.hidden) * 4;
  const bool act_staged = staged(act.kind);
  if (act_staged && unit > 0) {
    xfer_
        ->copy(QueueId::Activation, loc(act.home), loc_ptr(TierKind::Device, act_ws_.raw()),
               act_used, {phase, DataKind::Activation})
        .wait();
  }
  Tensor hidden = hidden_of(batch, rows);
  Stopwatch watch;
  const std::vector<Tensor> w = bind_weights(unit);
  const std::vector<int32_t> pad(padded_.pad.begin() + batch * gbs_,
                                 padded_.pad.begin() + (batch + 1) * gbs_);
  const int64_t first_row = batch * gbs_;
  if (unit == 0) {
    const OptEmbeddingWeights ew = bind_embedding_unit(unit, w);
    if (prefill) {
      const int64_t rows0 = first_row * s, rows1 = (first_row + gbs_) * s;
      const Tensor ids =
          ops::scratch_copy(ops::Scratch::TokenIds, padded_.ids.slice(rows0, rows1), dev_);
      const Tensor pos =
          ops::scratch_copy(ops::Scratch::Positions, padded_.positions.slice(rows0, rows1), dev_);
      opt_embed(cfg_, ew, ct, ids, pos, hidden);
    } else {
      Tensor ids = Tensor::empty({gbs_}, DType::I32), pos = Tensor::empty({gbs_}, DType::I32);
      const int32_t t = static_cast<int32_t>(s + decode_step);
      for (int64_t i = 0; i < gbs_; ++i) {
        ids.data<int32_t>()[i] = next_ids_[batch][i];
        pos.data<int32_t>()[i] = t - pad[i];
      }
      opt_embed(cfg_, ew, ct, ops::scratch_copy(ops::Scratch::TokenIds, ids, dev_),
                ops::scratch_copy(ops::Scratch::Positions, pos, dev_), hidden);
    }
  } else if (unit == units() - 1) {
    const OptEmbeddingWeights ew = bind_embedding_unit(unit, w);
    const Tensor last = last_positions(hidden, gbs_, prefill ? s : 1);
    opt_logits(cfg_, ew, ct, last, logits_);
    const int step = prefill ? 0 : decode_step + 1;
    std::vector<int32_t> ids;
    choose_tokens(logits_, spec_.gen, first_row, step, ids);
    next_ids_[batch] = ids;
    for (int64_t i = 0; i < gbs_; ++i) {
      const size_t seq = static_cast<size_t>(first_row + i);
      if (done_[seq]) continue;
      result_.tokens[seq].push_back(ids[i]);
      if (spec_.gen.stop_at_eos && ids[i] == cfg_.eos_id) done_[seq] = true;
    }
  } else {
    const int layer = unit - 1;
    const OptLayerWeights lw = bind_layer_weights(layer, w);
    const int buf = static_cast<int>((unit * ngb_ + batch) % 2);
    if (prefill) wait_stores(buf);  // decode waited when it loaded the buffer
    KvSlots slots = slots_for(layer, batch, buf);
    const KvRule& rule = spec_.gen.eviction;
    if (prefill) {
      Tensor* cs = rule.uses_attention_scores() ? &colsum_ : nullptr;
      opt_layer_prefill(cfg_, lw, ct, hidden, gbs_, s, pad, prefill_k_, prefill_v_, cs);
      kv_prefill(rule, prefill_k_, prefill_v_, cs, pad, slots);
      ops::synchronize(dev_);  // the store below reads what the device wrote
      compute_s_ += watch.elapsed();
      store_cache(layer, batch, buf, nullptr, phase);
      watch.reset();
    } else {
      const ChangedSlots changed =
          decode_layer(cfg_, lw, ct, rule, static_cast<int32_t>(s + decode_step), hidden, slots);
      ops::synchronize(dev_);
      compute_s_ += watch.elapsed();
      store_cache(layer, batch, buf, &changed, phase);
      watch.reset();
    }
  }
  ops::synchronize(dev_);  // timing, and the activation copy below reads the device's result
  compute_s_ += watch.elapsed();
  if (act_staged && unit < units() - 1) {
    xfer_
        ->copy(QueueId::Activation, loc_ptr(TierKind::Device, act_ws_.raw()), loc(act.home),
               act_used, {phase, DataKind::Activation})
        .wait();
  }
}

void Pipeline::step(bool prefill, int decode_step) {
  const std::string phase = prefill ? "prefill" : "decode";
  const bool overlap = pol_.overlap;
  std::vector<TransferHandle> wload = load_weights(0, phase);
  std::vector<TransferHandle> cload;
  for (int unit = 0; unit < units(); ++unit) {
    // Once per block: the next unit's weights go to the other workspace buffer.
    std::vector<TransferHandle> wnext;
    if (overlap && unit + 1 < units()) wnext = load_weights(unit + 1, phase);
    for (auto& h : wload) h.wait();
    for (int64_t batch = 0; batch < ngb_; ++batch) {
      const int buf = static_cast<int>((unit * ngb_ + batch) % 2);
      if (is_decoder(unit) && cload.empty() && !prefill) {
        cload = load_cache(unit - 1, static_cast<int>(batch), buf, phase);
      }
      for (auto& h : cload) h.wait();
      cload.clear();
      // The next visit's KV goes to the other buffer while this one computes.
      const int next_unit = batch + 1 < ngb_ ? unit : unit + 1;
      const int next_batch = batch + 1 < ngb_ ? static_cast<int>(batch + 1) : 0;
      compute(unit, static_cast<int>(batch), prefill, decode_step);
      if (overlap && !prefill && is_decoder(next_unit)) {
        cload = load_cache(next_unit - 1, next_batch, (buf + 1) % 2, phase);
      }
      if (!overlap) {
        for (auto& pending : kv_store_pending_) {
          for (auto& h : pending) h.wait();
          pending.clear();
        }
      }
    }
    if (!overlap && unit + 1 < units()) wnext = load_weights(unit + 1, phase);
    if (prefill && spec_.progress) {
      const double el = prefill_watch_.elapsed();
      std::fprintf(stderr, "\rprefill layer %d/%d  %.1f s  ETA %.1f s   ", unit + 1, units(), el,
                   el / (unit + 1) * (units() - unit - 1));
      if (unit + 1 == units()) std::fprintf(stderr, "\n");
    }
    wload = std::move(wnext);
  }
  for (auto& pending : kv_store_pending_) {
    for (auto& h : pending) h.wait();
    pending.clear();
  }
}

PipelineResult Pipeline::run() {
  plan_and_allocate();
  place_weights();
  allocate_kv_and_activations();
  const size_t n = spec_.prompts.size();
  result_.tokens.assign(n, {});
  done_.assign(n, false);
  next_ids_.assign(static_cast<size_t>(ngb_), {});
  xfer_->reset_counters();
  device_->reset_peak();
  host_->reset_peak();

  auto busy = [&](QueueId q) { return xfer_->busy_seconds(q); };
  auto record_stage = [&](const std::string& phase, double c0, double w0, double l0, double s0) {
    StageBusy& b = result_.stage_busy_s[phase];
    b.compute = compute_s_ - c0;
    b.weight_load = busy(QueueId::WeightLoad) - w0;
    b.cache_load = busy(QueueId::CacheLoad) - l0;
    b.cache_store = busy(QueueId::CacheStore) - s0;
  };
  Stopwatch watch;
  prefill_watch_.reset();
  step(/*prefill=*/true, 0);
  result_.prefill_s = watch.elapsed();
  record_stage("prefill", 0, 0, 0, 0);

  const double c0 = compute_s_, w0 = busy(QueueId::WeightLoad), l0 = busy(QueueId::CacheLoad);
  const double s0 = busy(QueueId::CacheStore);
  const int decode_steps = spec_.gen.gen_len - 1;
  const int to_run =
      spec_.projected_steps > 0 ? std::min(spec_.projected_steps, decode_steps) : decode_steps;
  watch.reset();
  for (int i = 0; i < to_run; ++i) {
    if (spec_.gen.stop_at_eos &&
        std::all_of(done_.begin(), done_.end(), [](bool d) { return d; })) {
      break;
    }
    step(/*prefill=*/false, i);
    ++result_.decode_steps_run;
    if (spec_.progress) {
      const double el = watch.elapsed();
      const double tps = static_cast<double>(n) * (i + 1) / el;
      std::fprintf(stderr, "\rdecode step %d/%d  %.2f tok/s  ETA %.1f s   ", i + 1, to_run, tps,
                   el / (i + 1) * (to_run - i - 1));
    }
  }
  if (spec_.progress && to_run > 0) std::fprintf(stderr, "\n");
  result_.decode_s = watch.elapsed();
  record_stage("decode", c0, w0, l0, s0);
  if (spec_.projected_steps > 0 && result_.decode_steps_run > 0 &&
      result_.decode_steps_run < decode_steps) {
    result_.projected = true;
    result_.decode_s *= static_cast<double>(decode_steps) / result_.decode_steps_run;
  }
  if (spec_.gen.capture_kept) {
    for (int64_t l = 0; l < cfg_.layers; ++l) {
      std::vector<std::vector<int32_t>> layer;
      for (int64_t b = 0; b < ngb_; ++b) {
        auto part = kept_positions(kv_[static_cast<size_t>(l * ngb_ + b)].pos);
        layer.insert(layer.end(), part.begin(), part.end());
      }
      result_.kept.push_back(std::move(layer));
    }
  }
  result_.bytes_moved = xfer_->counters();
  result_.peak_bytes["device"] = device_->peak();
  result_.peak_bytes["host"] = host_->peak();
  result_.peak_bytes["disk"] = disk_ ? disk_->peak() : 0;
  return result_;
}

}  // namespace

const char* pipeline_device_name(PipelineDevice d) {
  switch (d) {
    case PipelineDevice::Cpu:
      return "cpu";
    case PipelineDevice::CpuIsolated:
      return "cpu-isolated";
    case PipelineDevice::Cuda:
      return "cuda";
  }
  return "?";
}

PipelineResult run_pipeline(const PipelineSpec& spec) {
  Pipeline p(spec);
  return p.run();
}

}  // namespace h2oflex
