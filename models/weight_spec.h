// One weight tensor of a model, family-neutral: its checkpoint name, shape, role and layer.
#pragma once

#include <functional>
#include <string>

#include "runtime/core/storage_format.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

// Role decides storage: matrices are stored in the compute's weight dtype, vectors in f32.
enum class WeightRole { Matrix, Vector };

struct WeightSpec {
  std::string name;  // the checkpoint's name without the family's prefix, e.g.
                     // "decoder.layers.0.fc1.weight"
  Shape shape;
  WeightRole role;
  int layer;  // -1 for embedding / head tensors
};

// Fills one tensor, given its spec and the dtype to store it in, into dst (numel elements).
using WeightProducer = std::function<void(const WeightSpec&, DType, void* dst)>;
// Copies a tensor the checkpoint holds packed in `format` into dst as stored (rows of its format's
// row bytes, in the family's row order), no values unpacked.
using PackedWeightProducer = std::function<void(const WeightSpec&, PackedFormat, void* dst)>;

// The dtype a tensor of `role` is stored in when matrices use `matrix_dtype`.
inline DType stored_dtype(WeightRole role, DType matrix_dtype) {
  return role == WeightRole::Matrix ? matrix_dtype : DType::F32;
}

// compress_weight compresses the decoder layers' matrices. The embedding unit's tables stay
// plain: they are read by row lookups, the token table is also the tied LM head, and they are a
// few percent of a large model's bytes. Vectors (biases, norms) are never compressed.
inline bool compressible(const WeightSpec& spec) {
  return spec.role == WeightRole::Matrix && spec.layer >= 0 && spec.shape.size() == 2;
}

// Under weight_format: stored, a checkpoint's packed matrices stay in their blocks wherever they
// are: the layers' and an untied head's (ops::linear computes on blocks), and the token table
// (ops::embed_tokens unpacks only the rows it gathers; when tied it is the head, a linear too).
inline bool keeps_own_blocks(const WeightSpec& spec) {
  return spec.role == WeightRole::Matrix && spec.shape.size() == 2;
}

// How a tensor is stored: plain in stored_dtype, or compressed to 4 bits when `compress` and the
// tensor is compressible (dequantized to the matrix dtype).
inline StorageFormat stored_format(const WeightSpec& spec, DType matrix_dtype, bool compress) {
  const DType dt = stored_dtype(spec.role, matrix_dtype);
  return compress && compressible(spec) ? compressed_format(dt) : StorageFormat::plain(dt);
}

// The rule under the policy's weight_format, for a tensor the checkpoint holds in `source` (None:
// floats). Only compressible matrices are ever packed, and only in a format whose blocks divide
// their rows:
//   packed (q8_0, ...)  that format, packed at load (InputError for a format that cannot be
//                       packed here, naming weight_format);
//   stored              the checkpoint's own format when it holds one (keeps_own_blocks: the
//                       token table and head too), else as `compress` says;
//   plain               as `compress` says (q4_g64 or plain), whatever the checkpoint holds;
//   f32 / f16 / bf16    as plain; `matrix_dtype` must be that dtype (the run computes in it).
StorageFormat stored_format(const WeightSpec& spec, DType matrix_dtype, const WeightFormat& format,
                            bool compress, PackedFormat source);

}  // namespace h2oflex
