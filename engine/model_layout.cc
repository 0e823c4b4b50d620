#include "engine/model_layout.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "offload/io/io_engine.h"
#include "runtime/core/rng.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

namespace {

// ":int4g64" for q4_g64 alone (the name layouts of compress_weight have always had), else the
// packed formats' names: ":q4_1+q8_0". Empty when nothing is packed.
std::string layout_format_suffix(const std::vector<PackedFormat>& packed) {
  std::set<std::string_view> names;
  for (PackedFormat f : packed) {
    if (f != PackedFormat::None) names.insert(packed_format_row(f).name);
  }
  if (names.empty()) return "";
  if (names.size() == 1 && *names.begin() == packed_format_row(PackedFormat::Q4G64).name) {
    return ":int4g" + std::to_string(packed_format_row(PackedFormat::Q4G64).block_values);
  }
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? ":" : "+") + std::string(n);
  return out;
}

std::vector<PackedFormat> packed_of(const std::vector<StorageFormat>& formats) {
  std::vector<PackedFormat> out;
  for (const StorageFormat& f : formats) out.push_back(f.packed);
  return out;
}

std::string full_key(const std::string& key, DType matrix_dtype,
                     const std::vector<PackedFormat>& packed) {
  return key + ":" + std::string(dtype_name(matrix_dtype)) + layout_format_suffix(packed);
}

std::string layout_dir_name(const std::string& disk_path, const std::string& key,
                            DType matrix_dtype, const std::vector<PackedFormat>& packed) {
  // The directory is named after where the weights come from, not their content fingerprint:
  // a changed checkpoint is rebuilt in place (its index holds the full key) instead of leaving
  // the old layout behind to fill the disk.
  std::string where = key;
  if (const size_t at = where.find(":content="); at != std::string::npos) {
    where.erase(at, where.find(':', at + 1) - at);  // up to the next field, or the end
  }
  std::string name = full_key(where, matrix_dtype, packed);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '_';
  }
  if (name.size() > 120) {  // long directory keys: keep a readable tail plus a hash
    name = std::to_string(stable_hash(name.data(), name.size())) + "_" +
           name.substr(name.size() - 100);
  }
  return disk_path + "/h2oflex-weights/" + name;
}

}  // namespace

std::vector<TensorSpec> layout_specs(const DecoderModel& model,
                                     const std::vector<StorageFormat>& formats) {
  const auto& specs = model.weight_specs();
  H2OFLEX_CHECK(formats.size() == specs.size(), "layout_specs: ", formats.size(), " formats for ",
                specs.size(), " weights");
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const StorageFormat& f = formats[i];
    out.push_back({specs[i].name, stored_shape(f, specs[i].shape),
                   f.is_packed() ? DType::U8 : f.dtype, tensor_bytes(f, specs[i].shape)});
  }
  return out;
}

void produce_stored_tensor(const DecoderModel& model, size_t index, const StorageFormat& format,
                           const WeightProducer& producer, const PackedWeightProducer& packed,
                           void* dst) {
  const WeightSpec& spec = model.weight_specs().at(index);
  if (!format.is_packed()) {
    producer(spec, format.dtype, dst);
    return;
  }
  if (packed && model.weight_source(index) == format.packed) {
    packed(spec, format.packed, dst);  // the checkpoint's blocks as read
    return;
  }
  Tensor values = Tensor::empty(spec.shape, DType::F32);
  producer(spec, DType::F32, values.raw());
  Tensor out =
      Tensor::wrap(dst, stored_shape(format, spec.shape), DType::U8).as_packed(format.packed);
  ops::pack(values, out);
}

std::string model_layout_dir(const std::string& disk_path, const std::string& key,
                             DType matrix_dtype, const std::vector<StorageFormat>& formats) {
  return layout_dir_name(disk_path, key, matrix_dtype, packed_of(formats));
}

std::string model_layout_dir(const std::string& disk_path, const std::string& key,
                             DType matrix_dtype, bool compress) {
  return layout_dir_name(disk_path, key, matrix_dtype,
                         {compress ? PackedFormat::Q4G64 : PackedFormat::None});
}

std::unique_ptr<WeightLayout> open_or_build_model_layout(
    const std::string& dir, const std::string& key, const DecoderModel& model, DType matrix_dtype,
    const std::vector<StorageFormat>& formats, const LayoutSources& sources) {
  const std::vector<WeightSpec>& wspecs = model.weight_specs();
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < wspecs.size(); ++i) by_name[wspecs[i].name] = i;
  // Checkpoint readers produce whole tensors: keep the current one while the layout asks for it
  // chunk by chunk (memory: one tensor plus one chunk).
  std::string cached_name;
  std::vector<std::byte> cached;
  const TensorProducer producer = [&](const TensorSpec& t, uint64_t byte_offset,
                                      std::span<std::byte> out) {
    const size_t index = by_name.at(t.name);
    const WeightSpec& ws = wspecs[index];
    const size_t esize = dtype_size(t.dtype);
    if (formats[index].is_packed()) {  // produced (and packed) whole, then cut
      if (cached_name != t.name) {
        cached.resize(t.bytes);
        const WeightProducer one = [&](const WeightSpec& w, DType dt, void* dst) {
          if (sources.partial) {
            sources.partial(w, dt, 0, static_cast<uint64_t>(shape_numel(w.shape)), dst);
          } else {
            sources.whole(w, dt, dst);
          }
        };
        produce_stored_tensor(model, index, formats[index], one, sources.packed, cached.data());
        cached_name = t.name;
      }
      std::memcpy(out.data(), cached.data() + byte_offset, out.size());
      return;
    }
    if (sources.partial) {
      sources.partial(ws, t.dtype, byte_offset / esize, out.size() / esize, out.data());
      return;
    }
    if (byte_offset == 0 && out.size() == t.bytes) {
      sources.whole(ws, t.dtype, out.data());
      return;
    }
    if (cached_name != t.name) {
      cached.resize(t.bytes);
      sources.whole(ws, t.dtype, cached.data());
      cached_name = t.name;
    }
    std::memcpy(out.data(), cached.data() + byte_offset, out.size());
  };
  bool rebuilt = false;
  std::fprintf(stderr, "weights: opening the offload layout in %s ...\n", dir.c_str());
  auto layout = WeightLayout::open_or_build(dir, full_key(key, matrix_dtype, packed_of(formats)),
                                            layout_specs(model, formats), producer, {}, &rebuilt);
  std::fprintf(stderr, "weights: %s %s (%.2f GiB)\n", rebuilt ? "wrote" : "reused", dir.c_str(),
               static_cast<double>(layout->data_bytes()) / (1024.0 * 1024.0 * 1024.0));
  return layout;
}

std::unique_ptr<WeightLayout> open_or_build_model_layout(
    const std::string& dir, const std::string& key, const DecoderModel& model, DType matrix_dtype,
    const WeightProducer& whole, const PartialWeightProducer& partial) {
  return open_or_build_model_layout(
      dir, key, model, matrix_dtype,
      weight_formats(model, matrix_dtype, {WeightFormat::Mode::Plain, {}}, false),
      LayoutSources{whole, partial, {}});
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
