// OPT as a DecoderModel: learned positions (offset 2), LayerNorm, ReLU MLP, a token table tied to
// the LM head (unit 0 and the head unit share it), optional project_in / project_out.
#pragma once

#include "models/decoder_model.h"
#include "models/loaders/dummy_weights.h"  // dummy_weight_producer, for OPT runs without a checkpoint
#include "models/opt/opt_layers.h"

namespace h2oflex {

class OptModel final : public DecoderModel {
 public:
  explicit OptModel(OptConfig cfg);

  const OptConfig& config() const { return cfg_; }

  const std::string& name() const override { return cfg_.name; }
  int64_t layers() const override { return cfg_.layers; }
  int64_t hidden() const override { return cfg_.hidden; }
  int64_t vocab() const override { return cfg_.vocab; }
  int64_t max_positions() const override { return cfg_.max_positions; }
  SpecialTokens special_tokens() const override { return {cfg_.bos_id, cfg_.eos_id, cfg_.pad_id}; }
  KvGeometry kv_geometry() const override;
  const std::vector<WeightSpec>& weight_specs() const override { return specs_; }
  const std::vector<std::vector<size_t>>& unit_tensors() const override { return units_; }
  std::unique_ptr<UnitWeights> bind(int unit, const std::vector<Tensor>& tensors) const override;

  void embed(const UnitWeights& unit, ops::ComputeType ct, const Tensor& ids,
             const Tensor& positions, Tensor& hidden) const override;
  void attention_input(const UnitWeights& layer, ops::ComputeType ct, const Tensor& hidden,
                       const Tensor& positions, Tensor& q, Tensor& k, Tensor& v) const override;
  void layer_finish(const UnitWeights& layer, ops::ComputeType ct, Tensor& hidden,
                    const Tensor& attn) const override;
  void logits(const UnitWeights& head, ops::ComputeType ct, const Tensor& hidden,
              Tensor& logits) const override;
  int64_t scratch_elems_per_row() const override;

 private:
  OptConfig cfg_;
  std::vector<WeightSpec> specs_;
  std::vector<std::vector<size_t>> units_;
};

}  // namespace h2oflex
