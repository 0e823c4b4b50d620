// A model's weights in the offload layout on disk (offload/weights/weight_layout.h): written once
// per (model, weights, dtype) and reused by later runs, so a benchmark does not regenerate or
// reconvert tens of GB each time.
#pragma once

#include <memory>
#include <string>

#include "models/decoder_model.h"
#include "offload/weights/weight_layout.h"
#include "runtime/core/storage_format.h"

namespace h2oflex {

// Produces elements [first, first + count) of one tensor (dummy weights can; checkpoints read
// whole tensors, so this may be empty).
using PartialWeightProducer =
    std::function<void(const WeightSpec&, DType, uint64_t first, uint64_t count, void* dst)>;

// The layout's tensor list for `model`: matrices as `matrix_dtype`, vectors as f32, in the
// model's execution order (weight_specs()). With `compress`, the compressible matrices
// (models/weight_spec.h) are u8 [rows, quant4::row_bytes(columns)]: their compressed rows
// (runtime/core/quant4.h), dequantized to `matrix_dtype` where they are used. Sizes come from
// StorageFormat.
std::vector<TensorSpec> layout_specs(const DecoderModel& model, DType matrix_dtype,
                                     bool compress = false);

// Opens the layout in `dir` when its key matches `key` + dtype (+ compression), else writes it
// tensor by tensor with bounded memory (one tensor, for the compressed ones). Prints one line
// saying which happened.
std::unique_ptr<WeightLayout> open_or_build_model_layout(
    const std::string& dir, const std::string& key, const DecoderModel& model, DType matrix_dtype,
    const WeightProducer& whole, const PartialWeightProducer& partial, bool compress = false);

// Fills `dst` with tensor `spec` as stored under `layout` (from layout_specs): produced in
// f32 and compressed when the layout spec is u8, else produced in the spec's dtype.
void produce_stored_tensor(const WeightSpec& spec, const TensorSpec& layout,
                           const WeightProducer& producer, void* dst);

// A WeightProducer that reads tensors from a layout, checking each tensor's checksum.
WeightProducer layout_weight_producer(std::shared_ptr<WeightLayout> layout);

// Where runs keep layouts: DIR/h2oflex-weights/<key as a file name>, without the key's
// ":content=..." fingerprint (the layout's index compares that).
std::string model_layout_dir(const std::string& disk_path, const std::string& key,
                             DType matrix_dtype, bool compress = false);

}  // namespace h2oflex
