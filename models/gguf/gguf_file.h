// A GGUF file (llama.cpp's checkpoint format, versions 2 and 3): header, metadata, tensor infos.
//
// Opening reads the header, the metadata and the tensor infos (every count and length checked
// against what is left of the file before anything is allocated) and checks every tensor's
// type, dims and data range; tensor data is read one tensor at a time with pread when asked, so
// RAM stays bounded by the metadata plus the caller's buffer. Every malformed file raises
// InputError naming the file, the key or tensor, and the byte offset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/core/block_format.h"

namespace h2oflex {

// GGUF's metadata value types (gguf_type), by their stored ids.
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
std::string_view gguf_type_name(GgufType t);

struct GgufValue {
  GgufType type = GgufType::kU8;
  GgufType element_type = GgufType::kU8;  // for kArray
  // Unsigned integers, signed integers, floats, bools, strings, arrays.
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> value;
  uint64_t offset = 0;  // where the value starts in the file

  bool is_integer() const;
  bool is_number() const {
    return is_integer() || type == GgufType::kF32 || type == GgufType::kF64;
  }
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // GGUF's order: dims[0] is the fastest-varying (a row's length)
  const BlockFormat* format = nullptr;
  uint64_t offset = 0;  // absolute byte offset of the data in the file
  uint64_t nbytes = 0;
  uint64_t info_offset = 0;  // where the tensor's info starts in the file (for messages)

  uint64_t numel() const;
  // The shape outermost first, as safetensors and the engine write it: dims reversed.
  std::vector<int64_t> shape() const;
};

class GgufFile {
 public:
  static GgufFile open(const std::filesystem::path& file);

  GgufFile(GgufFile&& other) noexcept;
  GgufFile& operator=(GgufFile&& other) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::filesystem::path& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return file_size_; }

  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;

  // Typed access; InputError naming the file, the key and its offset when the key is missing
  // (for the required forms) or holds another type.
  std::string string(std::string_view key) const;
  uint64_t uint(std::string_view key) const;  // any integer type, not negative
  double number(std::string_view key) const;  // any integer or float type
  bool boolean(std::string_view key) const;
  std::vector<std::string> strings(std::string_view key) const;  // an array of strings
  std::vector<int64_t> integers(std::string_view key) const;     // an array of integers
  std::vector<double> numbers(std::string_view key) const;       // an array of numbers

  // In file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // The tensor's stored bytes (info.nbytes of them) into `dst`. Thread-safe.
  void read_raw(const GgufTensorInfo& info, void* dst) const;
  // The tensor unpacked to f32 (info.numel() values) into `dst`, a block range at a time;
  // InputError naming the tensor and its type when the table cannot unpack it.
  void read_f32(const GgufTensorInfo& info, float* dst) const;
  // Rows [first, first + count) of the tensor (a row: dims[0] values) unpacked into `dst`.
  void read_f32_rows(const GgufTensorInfo& info, uint64_t first, uint64_t count, float* dst) const;

  // "'FILE': " + what, for messages of code that reads this file.
  std::string where(std::string_view what) const;
  // InputError for `key`: "'FILE': metadata key 'KEY' (at byte offset N) WHY".
  [[noreturn]] void key_error(std::string_view key, std::string_view why) const;

 private:
  GgufFile() = default;

  std::filesystem::path path_;
  int fd_ = -1;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  uint64_t file_size_ = 0;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

// Throws InputError naming the tensor, its type and the readable types when the block table
// cannot unpack `info`'s type.
void require_unpackable(const GgufFile& file, const GgufTensorInfo& info);

}  // namespace h2oflex
