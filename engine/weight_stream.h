// The weights of a pipeline run: their homes (a WeightStore over the offload layout, or over
// the producer when nothing is on disk) and the double-buffered device workspace that a unit's
// staged weights are prefetched into one unit ahead of compute.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/model_layout.h"
#include "engine/pipeline_stage.h"
#include "engine/tier_set.h"
#include "offload/weights/weight_store.h"

namespace h2oflex {

struct WeightSourceSpec {
  WeightProducer producer;
  PartialWeightProducer partial_producer;  // optional: faster layout writing for dummy weights
  PackedWeightProducer packed_producer;    // optional: a checkpoint's packed blocks as stored
  std::string weights_key;  // identifies the weights; disk-resident weights live in a layout
                            // under disk_path keyed by it, reused by later runs
  bool pin = true;          // host homes pinned
  WeightFormat format;      // the policy's weight_format
};

class WeightStream {
 public:
  // Places every tensor of `stage` in its planned home (writing or reusing the layout of the
  // whole model when any is on disk). Units and tensor indices are the stage's (its footprint's;
  // the plan is made from it).
  WeightStream(const DecoderModel& model, const PipelineStage& stage, DType matrix_dtype,
               const policy::MemoryPlan& plan, const WeightSourceSpec& source, TierSet& tiers);
  ~WeightStream();
  WeightStream(const WeightStream&) = delete;
  WeightStream& operator=(const WeightStream&) = delete;

  // Copies `unit`'s staged tensors into workspace buffer unit % 2; returns what to wait for.
  std::vector<TransferHandle> prefetch(int unit, const std::string& phase);
  // The unit's weights bound by the model: staged tensors from the workspace, others in place;
  // packed matrices as their u8 rows, marked with their format (ops::linear takes them).
  std::unique_ptr<UnitWeights> bind(int unit) const;

 private:
  void check_disk_room(const std::string& layout_dir, const std::vector<TensorSpec>& layout) const;

  const DecoderModel& model_;
  const PipelineStage& stage_;
  const policy::MemoryPlan& plan_;
  TierSet& tiers_;
  std::vector<StorageFormat> formats_;  // per model tensor (weight_formats)
  std::vector<TensorSpec> specs_;       // per stage tensor
  std::unique_ptr<WeightLayout> layout_;
  std::unique_ptr<WeightStore> store_;
  void* workspace_[2] = {nullptr, nullptr};
};

}  // namespace h2oflex
