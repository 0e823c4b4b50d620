// What the engine needs from a decoder-only model family, and nothing more.
//
// A model is a list of weight tensors grouped into units — 0 the input embedding, 1..L the
// decoder layers, L + 1 the output head (a tensor may belong to two units, like a tied token
// table) — and four computations over a unit's bound weights: embed, attention input (q, k, v,
// after any positional encoding, so the KV cache always holds keys as attention reads them),
// layer finish (everything after attention), and logits. Attention itself, the KV cache and
// eviction belong to the engine; the family only states the KV geometry.
//
// Hidden states are f32 [rows, hidden]; q is [rows, query_heads * head_dim], k and v are
// [rows, kv_heads * head_dim]. A new family implements this interface in models/<family>/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/weight_spec.h"
#include "runtime/core/op_types.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

struct KvGeometry {
  int64_t query_heads = 0;
  int64_t kv_heads = 0;  // < query_heads for grouped-query attention
  int64_t head_dim = 0;
  float softmax_scale = 1.0f;
};

struct SpecialTokens {
  int32_t bos = 0, eos = 0, pad = 0;
};

// A unit's weights bound by the family into whatever it computes with. The engine only passes
// it back to the family that made it.
class UnitWeights {
 public:
  virtual ~UnitWeights() = default;
};

class DecoderModel {
 public:
  virtual ~DecoderModel() = default;

  virtual const std::string& name() const = 0;
  virtual int64_t layers() const = 0;
  virtual int64_t hidden() const = 0;
  virtual int64_t vocab() const = 0;
  virtual int64_t max_positions() const = 0;  // prompt + generated tokens may not exceed it
  virtual SpecialTokens special_tokens() const = 0;
  virtual KvGeometry kv_geometry() const = 0;

  // Every weight tensor in execution order (the order a streaming reader meets them).
  virtual const std::vector<WeightSpec>& weight_specs() const = 0;
  // Per unit (0 .. layers() + 1), indices into weight_specs(), in the order bind() expects.
  virtual const std::vector<std::vector<size_t>>& unit_tensors() const = 0;
  // Binds the tensors of `unit` (unit_tensors()[unit] order); tensors are views, not copies.
  virtual std::unique_ptr<UnitWeights> bind(int unit, const std::vector<Tensor>& tensors) const = 0;

  // hidden[rows] = the embedding of ids at positions (i32, padding -1) — unit 0.
  virtual void embed(const UnitWeights& unit, ops::ComputeType ct, const Tensor& ids,
                     const Tensor& positions, Tensor& hidden) const = 0;
  // q, k, v of a layer's input rows at `positions` — units 1..L.
  virtual void attention_input(const UnitWeights& layer, ops::ComputeType ct, const Tensor& hidden,
                               const Tensor& positions, Tensor& q, Tensor& k, Tensor& v) const = 0;
  // The rest of a layer once attention produced `attn` [rows, query_heads * head_dim]; updates
  // hidden in place.
  virtual void layer_finish(const UnitWeights& layer, ops::ComputeType ct, Tensor& hidden,
                            const Tensor& attn) const = 0;
  // logits[rows, vocab] from final hidden states — unit L + 1.
  virtual void logits(const UnitWeights& head, ops::ComputeType ct, const Tensor& hidden,
                      Tensor& logits) const = 0;

  // f32 elements per hidden row of the working buffers the four computations use at once
  // (normed input, projections, MLP), so the engine can plan their memory on the device.
  virtual int64_t scratch_elems_per_row() const = 0;

  int units() const { return static_cast<int>(layers()) + 2; }
  int head_unit() const { return units() - 1; }

  // The packed format the checkpoint holds weight i in (a GGUF tensor's blocks), None for a float
  // one. Set once by the checkpoint's reader, before the model is shared.
  PackedFormat weight_source(size_t i) const {
    return i < weight_sources_.size() ? weight_sources_[i] : PackedFormat::None;
  }
  void set_weight_sources(std::vector<PackedFormat> sources) {
    weight_sources_ = std::move(sources);
  }

 private:
  std::vector<PackedFormat> weight_sources_;
};

// How each weight is stored under `format` (and compress_weight): models/weight_spec.h's rule,
// stored_format, per tensor with the checkpoint's own formats.
std::vector<StorageFormat> weight_formats(const DecoderModel& model, DType matrix_dtype,
                                          const WeightFormat& format, bool compress);

// Every weight element of the model (a tensor shared by two units counted once).
int64_t parameter_count(const DecoderModel& model);

// A model's weights as tensors, one per weight spec (weight_specs() order).
struct ModelWeights {
  std::vector<Tensor> tensors;

  // The tensors of `unit`, in bind() order.
  std::vector<Tensor> of_unit(const DecoderModel& model, int unit) const;
  // The tensor named `name` (InputError when the model has none).
  const Tensor& named(const DecoderModel& model, const std::string& name) const;
  // Every tensor on `device` (tensors already there are shared, not copied).
  ModelWeights on_device(Device device) const;
};

// Loads every tensor into host memory: matrices as `matrix_dtype`, vectors as f32.
ModelWeights load_model_weights(const DecoderModel& model, DType matrix_dtype,
                                const WeightProducer& fill);
// The same in `formats` (weight_formats): a packed tensor is filled by `packed` when given and the
// checkpoint holds it in that format (its blocks as read), else packed from its f32 values.
ModelWeights load_model_weights(const DecoderModel& model,
                                const std::vector<StorageFormat>& formats,
                                const WeightProducer& fill, const PackedWeightProducer& packed);

// compress_weight in memory: every compressible matrix (weight_spec.h) replaced by its
// compressed u8 rows (q4_g64), which ops::linear takes as they are.
void compress_model_weights(const DecoderModel& model, ModelWeights& weights);

// Builds unit_tensors() from the specs' layers: spec i with layer l >= 0 goes to unit l + 1;
// the rest go to the unit `embedding_or_head(spec)` returns (0, the head unit, or both).
enum class UnitSide { Embedding, Head, Both };
std::vector<std::vector<size_t>> group_units(
    const std::vector<WeightSpec>& specs, int64_t layers,
    const std::function<UnitSide(const WeightSpec&)>& embedding_or_head);

}  // namespace h2oflex
