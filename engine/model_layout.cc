#include "engine/model_layout.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "offload/io/io_engine.h"
#include "runtime/core/quant4.h"
#include "runtime/core/rng.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

namespace {

std::string full_key(const std::string& key, DType matrix_dtype, bool compress) {
  const StorageFormat f = compressed_format(matrix_dtype);
  return key + ":" + std::string(dtype_name(matrix_dtype)) +
         (compress ? ":int" + std::to_string(f.bits) + "g" + std::to_string(f.group_size) : "");
}

}  // namespace

std::vector<TensorSpec> layout_specs(const DecoderModel& model, DType matrix_dtype, bool compress) {
  std::vector<TensorSpec> out;
  for (const WeightSpec& s : model.weight_specs()) {
    const StorageFormat f = stored_format(s, matrix_dtype, compress);
    const uint64_t bytes = tensor_bytes(f, s.shape);
    if (f.packed()) {
      const int64_t rows = shape_numel(s.shape) / s.shape.back();
      out.push_back({s.name, {rows, quant4::row_bytes(s.shape.back())}, DType::U8, bytes});
    } else {
      out.push_back({s.name, s.shape, f.dtype, bytes});
    }
  }
  return out;
}

void produce_stored_tensor(const WeightSpec& spec, const TensorSpec& layout,
                           const WeightProducer& producer, void* dst) {
  if (layout.dtype != DType::U8) {
    producer(spec, layout.dtype, dst);
    return;
  }
  Tensor values = Tensor::empty(spec.shape, DType::F32);
  producer(spec, DType::F32, values.raw());
  Tensor packed = Tensor::wrap(dst, layout.shape, DType::U8);
  ops::quantize4(values, packed);
}

std::string model_layout_dir(const std::string& disk_path, const std::string& key,
                             DType matrix_dtype, bool compress) {
  // The directory is named after where the weights come from, not their content fingerprint:
  // a changed checkpoint is rebuilt in place (its index holds the full key) instead of leaving
  // the old layout behind to fill the disk.
  std::string where = key;
  if (const size_t at = where.find(":content="); at != std::string::npos) {
    where.erase(at, where.find(':', at + 1) - at);  // up to the next field, or the end
  }
  std::string name = full_key(where, matrix_dtype, compress);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '_';
  }
  if (name.size() > 120) {  // long directory keys: keep a readable tail plus a hash
    name = std::to_string(stable_hash(name.data(), name.size())) + "_" +
           name.substr(name.size() - 100);
  }
  return disk_path + "/h2oflex-weights/" + name;
}

std::unique_ptr<WeightLayout> open_or_build_model_layout(
    const std::string& dir, const std::string& key, const DecoderModel& model, DType matrix_dtype,
    const WeightProducer& whole, const PartialWeightProducer& partial, bool compress) {
  const std::vector<WeightSpec>& wspecs = model.weight_specs();
  std::map<std::string, const WeightSpec*> by_name;
  for (const auto& s : wspecs) by_name[s.name] = &s;
  // Checkpoint readers produce whole tensors: keep the current one while the layout asks for it
  // chunk by chunk (memory: one tensor plus one chunk).
  std::string cached_name;
  std::vector<std::byte> cached;
  const TensorProducer producer = [&](const TensorSpec& t, uint64_t byte_offset,
                                      std::span<std::byte> out) {
    const WeightSpec& ws = *by_name.at(t.name);
    const size_t esize = dtype_size(t.dtype);
    if (t.dtype == DType::U8) {  // compressed: produced and compressed whole, then cut
      if (cached_name != t.name) {
        cached.resize(t.bytes);
        const WeightProducer one = [&](const WeightSpec& w, DType dt, void* dst) {
          if (partial) {
            partial(w, dt, 0, static_cast<uint64_t>(shape_numel(w.shape)), dst);
          } else {
            whole(w, dt, dst);
          }
        };
        produce_stored_tensor(ws, t, one, cached.data());
        cached_name = t.name;
      }
      std::memcpy(out.data(), cached.data() + byte_offset, out.size());
      return;
    }
    if (partial) {
      partial(ws, t.dtype, byte_offset / esize, out.size() / esize, out.data());
      return;
    }
    if (byte_offset == 0 && out.size() == t.bytes) {
      whole(ws, t.dtype, out.data());
      return;
    }
    if (cached_name != t.name) {
      cached.resize(t.bytes);
      whole(ws, t.dtype, cached.data());
      cached_name = t.name;
    }
    std::memcpy(out.data(), cached.data() + byte_offset, out.size());
  };
  bool rebuilt = false;
  std::fprintf(stderr, "weights: opening the offload layout in %s ...\n", dir.c_str());
  auto layout = WeightLayout::open_or_build(dir, full_key(key, matrix_dtype, compress),
                                            layout_specs(model, matrix_dtype, compress), producer,
                                            {}, &rebuilt);
  std::fprintf(stderr, "weights: %s %s (%.2f GiB)\n", rebuilt ? "wrote" : "reused", dir.c_str(),
               static_cast<double>(layout->data_bytes()) / (1024.0 * 1024.0 * 1024.0));
  return layout;
}

WeightProducer layout_weight_producer(std::shared_ptr<WeightLayout> layout) {
  auto io = std::make_shared<IoEngine>();
  auto mutex = std::make_shared<std::mutex>();
  return [layout, io, mutex](const WeightSpec& spec, DType dtype, void* dst) {
    const WeightRecord& r = layout->record(layout->find(spec.name));
    H2OFLEX_INPUT_CHECK(r.spec.shape == spec.shape, layout->directory(), ": tensor '", spec.name,
                        "' has shape ", shape_str(r.spec.shape), " but ", shape_str(spec.shape),
                        " is needed");
    std::lock_guard lock(*mutex);
    // Direct I/O needs an aligned buffer; read through one, then check and copy out.
    const size_t block = layout->file().block();
    const size_t padded = (r.spec.bytes + block - 1) / block * block;
    std::unique_ptr<std::byte, decltype(&std::free)> buf(
        static_cast<std::byte*>(std::aligned_alloc(4096, (padded + 4095) / 4096 * 4096)),
        &std::free);
    const size_t got = io->read_upto(layout->file(), r.offset, buf.get(), padded);
    if (got < r.spec.bytes) {
      throw IoError(detail::concat(layout->file().path(), ": tensor '", spec.name, "' at offset ",
                                   r.offset, " needs ", r.spec.bytes, " bytes, the file has ",
                                   got));
    }
    check_weight_checksum(r, layout->file().path(), buf.get());
    if (r.spec.dtype == dtype) {
      std::memcpy(dst, buf.get(), r.spec.bytes);
    } else {  // stored in another float type than this run computes with
      const Tensor stored = Tensor::wrap(buf.get(), r.spec.shape, r.spec.dtype);
      const Tensor converted = to_dtype(stored, dtype);
      std::memcpy(dst, converted.raw(), converted.nbytes());
    }
  };
}

}  // namespace h2oflex
