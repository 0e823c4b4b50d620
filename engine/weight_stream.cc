#include "engine/weight_stream.h"

#include <algorithm>
#include <filesystem>

#include "runtime/core/disk_space.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

namespace {

std::vector<TensorSpec> stage_specs(std::vector<TensorSpec> all, const PipelineStage& stage) {
  std::vector<TensorSpec> mine;
  for (size_t i : stage.part.model_tensor) mine.push_back(all.at(i));
  return mine;
}

// The formats the plan sized the weights in: the policy's weight_format, with compress_weight's
// q4_g64 where the plan chose it (memory_plan.h, WeightPlacement::compressed).
std::vector<StorageFormat> planned_formats(const DecoderModel& model, DType matrix_dtype,
                                           const policy::MemoryPlan& plan,
                                           const WeightFormat& format) {
  const auto& c = plan.weights->compressed;
  return weight_formats(model, matrix_dtype, format,
                        std::find(c.begin(), c.end(), true) != c.end());
}

}  // namespace

WeightStream::WeightStream(const DecoderModel& model, const PipelineStage& stage,
                           DType matrix_dtype, const policy::MemoryPlan& plan,
                           const WeightSourceSpec& source, TierSet& tiers)
    : model_(model),
      stage_(stage),
      plan_(plan),
      tiers_(tiers),
      formats_(planned_formats(model, matrix_dtype, plan, source.format)),
      specs_(stage_specs(layout_specs(model, formats_), stage)) {
  for (size_t i = 0; i < specs_.size(); ++i) {
    H2OFLEX_CHECK(specs_[i].bytes == plan.weights->bytes[i], "weights: '", specs_[i].name,
                  "' is stored in ", specs_[i].bytes, " bytes, the plan has ",
                  plan.weights->bytes[i]);
  }
  const std::vector<TierKind>& homes = plan.weights->home;
  const bool any_disk = std::find(homes.begin(), homes.end(), TierKind::Disk) != homes.end();
  if (any_disk) {
    // Disk-resident weights are read from the offload layout in place; memory-resident ones are
    // read from it once (faster than producing them again).
    H2OFLEX_CHECK(!source.weights_key.empty(), "pipeline: weights on disk need a weights_key");
    const std::string dir =
        model_layout_dir(tiers.disk_path(), source.weights_key, matrix_dtype, formats_);
    check_disk_room(dir, layout_specs(model, formats_));
    layout_ = open_or_build_model_layout(
        dir, source.weights_key, model, matrix_dtype, formats_,
        LayoutSources{source.producer, source.partial_producer, source.packed_producer});
  }
  WeightSource from;
  from.layout = layout_.get();
  if (!layout_) {
    from.fill = [this, producer = source.producer, packed = source.packed_producer](size_t i,
                                                                                    void* dst) {
      const size_t index = stage_.part.model_tensor[i];
      produce_stored_tensor(model_, index, formats_[index], producer, packed, dst);
    };
  }
  store_ = std::make_unique<WeightStore>(
      specs_, std::move(from), tiers.transfers(),
      WeightStoreTiers{&tiers.device(), &tiers.host(), tiers.disk()}, plan.weights->home,
      WeightStoreSettings{/*verify_checksums=*/true, /*pin_host=*/source.pin,
                          /*pin_upload=*/tiers.pins_for_device()});
  store_->materialize();
  if (plan.weights->workspace > 0) {
    for (void*& w : workspace_)
      w = tiers.device().allocate(plan.weights->workspace, "weight workspace");
  }
}

WeightStream::~WeightStream() {
  for (void* w : workspace_) {
    if (w == nullptr) continue;
    try {
      tiers_.device().free(w);
    } catch (...) {  // after a device error the free fails too; that error is the one reported
    }
  }
}

// Refuses, before writing anything, a layout that the disk cannot hold (an existing layout of
// the same size is reused, so it needs no new room). The layout holds the whole model, also
// when this process is one pipeline stage of it (the stages share one layout).
void WeightStream::check_disk_room(const std::string& layout_dir,
                                   const std::vector<TensorSpec>& layout) const {
  namespace fs = std::filesystem;
  uint64_t needed = 0;
  for (const TensorSpec& t : layout) needed += policy::plan_round(t.bytes);
  const fs::path data = fs::path(layout_dir) / WeightLayout::kDataFile;
  std::error_code ec;
  const uint64_t existing = fs::exists(data, ec) ? fs::file_size(data, ec) : 0;
  const uint64_t fresh = needed > existing ? needed - existing : 0;
  check_free_space(tiers_.disk_path(), fresh,
                   detail::concat("the weights' offload layout (", needed, " bytes, ", existing,
                                  " of them already on disk)"),
                   "free some space or point hardware.disk_path elsewhere");
}

std::vector<TransferHandle> WeightStream::prefetch(int unit, const std::string& phase) {
  std::vector<TransferHandle> handles;
  const auto& tensors = stage_.part.footprint.unit_tensors[static_cast<size_t>(unit)];
  for (size_t j = 0; j < tensors.size(); ++j) {
    const size_t i = tensors[j];
    if (!plan_.staged(plan_.weights->home[i])) continue;
    void* dst = static_cast<char*>(workspace_[unit % 2]) + plan_.weights->workspace_offset[unit][j];
    handles.push_back(store_->fetch(i, tiers_.at(TierKind::Device, dst), phase));
  }
  return handles;
}

std::unique_ptr<UnitWeights> WeightStream::bind(int unit) const {
  std::vector<Tensor> out;
  const auto& tensors = stage_.part.footprint.unit_tensors[static_cast<size_t>(unit)];
  for (size_t j = 0; j < tensors.size(); ++j) {
    const size_t i = tensors[j];
    const TierKind home = plan_.weights->home[i];
    const bool in_workspace = plan_.staged(home);
    void* p = in_workspace ? static_cast<char*>(workspace_[unit % 2]) +
                                 plan_.weights->workspace_offset[unit][j]
                           : store_->resident(i);
    const Device d = in_workspace ? tiers_.compute_device() : tiers_.tensor_device(home);
    // A packed matrix is bound as its u8 rows: ops::linear unpacks where it computes.
    const PackedFormat f = formats_[stage_.part.model_tensor[i]].packed;
    out.push_back(Tensor::wrap(p, specs_[i].shape, specs_[i].dtype, d).as_packed(f));
  }
  return model_.bind(stage_.part.model_unit[static_cast<size_t>(unit)], out);
}

}  // namespace h2oflex
