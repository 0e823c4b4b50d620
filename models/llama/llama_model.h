// The LLaMA family as a DecoderModel: RMSNorm, rotary positions (HF half-split, keys cached after
// rotation), grouped-query attention, SwiGLU MLP, tied or untied LM head, optional q/k/v biases
// (Qwen2). Checkpoint names are HF's without the "model." prefix ("layers.0.mlp.up_proj.weight";
// the head is "lm_head.weight").
#pragma once

#include "models/decoder_model.h"
#include "models/llama/llama_config.h"

namespace h2oflex {

class LlamaModel final : public DecoderModel {
 public:
  explicit LlamaModel(LlamaConfig cfg);

  const LlamaConfig& config() const { return cfg_; }

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
  LlamaConfig cfg_;
  std::vector<WeightSpec> specs_;
  std::vector<std::vector<size_t>> units_;
  Tensor inv_freq_;  // host f32 [head_dim / 2]
};

}  // namespace h2oflex
