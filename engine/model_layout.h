// A model's weights in the offload layout on disk (offload/weights/weight_layout.h): written once
// per (model, weights, dtype) and reused by later runs, so a benchmark does not regenerate or
// reconvert tens of GB each time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/decoder_model.h"
#include "offload/weights/weight_layout.h"
#include "runtime/core/storage_format.h"

namespace h2oflex {

// Produces elements [first, first + count) of one tensor (dummy weights can; checkpoints read
// whole tensors, so this may be empty).
using PartialWeightProducer =
    std::function<void(const WeightSpec&, DType, uint64_t first, uint64_t count, void* dst)>;

// The layout's tensor list for `model`, tensor i stored in formats[i] (weight_formats,
// models/decoder_model.h), in the model's execution order (weight_specs()): a plain tensor in its
// shape and dtype, a packed one as u8 [rows, its format's row bytes]. Sizes come from
// StorageFormat.
std::vector<TensorSpec> layout_specs(const DecoderModel& model,
                                     const std::vector<StorageFormat>& formats);

// Where a layout's weights come from: floats by spec and dtype (`whole`, or `partial` pieces for
// dummy weights), and for tensors the checkpoint holds packed, their blocks as read (`packed`).
struct LayoutSources {
  WeightProducer whole;
  PartialWeightProducer partial;
  PackedWeightProducer packed;
};

// Opens the layout in `dir` when its key matches `key` + dtype + formats, else writes it tensor
// by tensor with bounded memory (one tensor, for the packed ones). Prints one line saying which
// happened.
std::unique_ptr<WeightLayout> open_or_build_model_layout(
    const std::string& dir, const std::string& key, const DecoderModel& model, DType matrix_dtype,
    const std::vector<StorageFormat>& formats, const LayoutSources& sources);

// The same with every tensor plain (matrices as `matrix_dtype`, vectors as f32).
std::unique_ptr<WeightLayout> open_or_build_model_layout(
    const std::string& dir, const std::string& key, const DecoderModel& model, DType matrix_dtype,
    const WeightProducer& whole, const PartialWeightProducer& partial = {});

// Fills `dst` with weight `index` of `model` as stored in `format`: a plain tensor produced in its
// dtype; a packed one copied from the checkpoint's blocks when it holds them in that format, else
// produced in f32 and packed.
void produce_stored_tensor(const DecoderModel& model, size_t index, const StorageFormat& format,
                           const WeightProducer& producer, const PackedWeightProducer& packed,
                           void* dst);

// A WeightProducer that reads tensors from a layout, checking each tensor's checksum.
WeightProducer layout_weight_producer(std::shared_ptr<WeightLayout> layout);

// Where runs keep layouts: DIR/h2oflex-weights/<key as a file name>, without the key's
// ":content=..." fingerprint (the layout's index compares that). The name says the matrix dtype
// and the packed formats (layout_format_suffix).
std::string model_layout_dir(const std::string& disk_path, const std::string& key,
                             DType matrix_dtype, const std::vector<StorageFormat>& formats);
// The same for a model whose compressible matrices are plain, or q4_g64 under `compress`.
std::string model_layout_dir(const std::string& disk_path, const std::string& key,
                             DType matrix_dtype, bool compress = false);

}  // namespace h2oflex
