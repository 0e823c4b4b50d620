// Safetensors checkpoints (one file, or shards listed by model.safetensors.index.json).
//
// Opening parses only the JSON headers; tensor data is read one tensor at a time with pread into a
// caller buffer, converted on the way through a small staging buffer, so RAM stays bounded by the
// destination plus a few MiB no matter how large the checkpoint is. Every malformed or truncated
// input raises InputError naming the file and, where there is one, the tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;  // as stored: F32, F16 or BF16
  Shape shape;
  std::filesystem::path file;  // the file holding the data
  uint64_t offset = 0;         // absolute byte offset of the first element in `file`
  uint64_t nbytes = 0;         // numel(shape) * dtype_size(dtype)
};

class SafetensorsReader {
 public:
  static constexpr const char* kIndexName = "model.safetensors.index.json";
  static constexpr const char* kSingleName = "model.safetensors";

  // `dir_or_file` is a .safetensors file, or a directory holding model.safetensors.index.json
  // (sharded; preferred when both exist) or model.safetensors.
  static SafetensorsReader open(const std::filesystem::path& dir_or_file);

  SafetensorsReader(SafetensorsReader&& other) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&& other) noexcept;
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;
  ~SafetensorsReader();

  // What was opened (the file, or the index file of a sharded set) and the data files, in order.
  const std::filesystem::path& source() const { return source_; }
  const std::vector<std::filesystem::path>& files() const { return files_; }

  // All tensors, ordered by file then offset (the order that reads them sequentially).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;
  // Like find, but throws InputError naming the checkpoint when the tensor is absent.
  const TensorInfo& get(std::string_view name) const;

  // Reads one tensor into `dst` (numel * dtype_size(out_dtype) bytes), converting among
  // F32/F16/BF16. Safe to call from several threads at once.
  void read(const TensorInfo& info, DType out_dtype, void* dst) const;
  // Same into a new owning host tensor of shape info.shape.
  Tensor read(const TensorInfo& info, DType out_dtype) const;

 private:
  SafetensorsReader() = default;
  void add_file(const std::filesystem::path& file);
  void finish();
  int fd_of(const std::filesystem::path& file) const;

  std::filesystem::path source_;
  std::vector<std::filesystem::path> files_;
  std::vector<int> fds_;  // parallel to files_
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

// Throws InputError naming the tensor, its file and both shapes when info.shape != expected.
void check_tensor_shape(const TensorInfo& info, const Shape& expected);

}  // namespace h2oflex
