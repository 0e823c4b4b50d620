#include "models/loaders/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <span>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/core/error.h"
#include "runtime/core/half.h"
#include "runtime/core/quote.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swapping");

// The format caps the JSON header at 100 MB; anything larger is corrupt, not a big model.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
// Staging buffer for dtype conversion: bounds the extra RAM a read needs.
constexpr uint64_t kStagingBytes = 4ull << 20;

std::string quoted(const fs::path& p) {
  return detail::concat("'", p.string(), "'");
}

// Reads exactly n bytes at `offset`; a short file here means it changed after it was opened.
void pread_exact(int fd, void* dst, uint64_t n, uint64_t offset, const fs::path& file,
                 std::string_view what) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(n, 1ull << 30));
    const ssize_t got = ::pread(fd, p, want, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError(detail::concat(quoted(file), ": reading ", what, " at offset ", offset, " (", n,
                                   " bytes left): ", std::strerror(errno)));
    }
    if (got == 0) {
      throw IoError(detail::concat(quoted(file), ": unexpected end of file at offset ", offset,
                                   " while reading ", what, " (", n, " bytes missing)"));
    }
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
}

DType parse_stored_dtype(const std::string& s, const fs::path& file, const std::string& tensor) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  throw InputError(detail::concat(quoted(file), ": tensor '", tensor, "' has dtype '", s,
                                  "'; only F32, F16 and BF16 are supported"));
}

// Converts n elements between the float formats (same dtype = copy).
void convert(DType from, const void* src, DType to, void* dst, size_t n) {
  if (from == to) {
    std::memcpy(dst, src, n * dtype_size(from));
    return;
  }
  const auto* s16 = static_cast<const uint16_t*>(src);
  auto* d16 = static_cast<uint16_t*>(dst);
  if (from == DType::F32 && to == DType::F16) {
    convert_f32_to_f16(static_cast<const float*>(src), d16, n);
  } else if (from == DType::F32 && to == DType::BF16) {
    convert_f32_to_bf16(static_cast<const float*>(src), d16, n);
  } else if (from == DType::F16 && to == DType::F32) {
    convert_f16_to_f32(s16, static_cast<float*>(dst), n);
  } else if (from == DType::BF16 && to == DType::F32) {
    convert_bf16_to_f32(s16, static_cast<float*>(dst), n);
  } else if (from == DType::F16 && to == DType::BF16) {
    // f16 -> f32 is exact, so this rounds once.
    for (size_t i = 0; i < n; ++i) d16[i] = f32_to_bf16(f16_to_f32(s16[i]));
  } else if (from == DType::BF16 && to == DType::F16) {
    for (size_t i = 0; i < n; ++i) d16[i] = f32_to_f16(bf16_to_f32(s16[i]));
  } else {
    throw InternalError(
        detail::concat("no conversion from ", dtype_name(from), " to ", dtype_name(to)));
  }
}

json parse_json_file(const fs::path& file, std::string_view what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(detail::concat(quoted(file), ": cannot open ", what));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    throw InputError(detail::concat(quoted(file), ": malformed ", what, ": ", e.what()));
  }
}

uint64_t checked_numel_bytes(const Shape& shape, DType dtype, const fs::path& file,
                             const std::string& tensor) {
  uint64_t total = dtype_size(dtype);
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(total, static_cast<uint64_t>(d), &total)) {
      throw InputError(detail::concat(quoted(file), ": tensor '", tensor, "' shape ",
                                      shape_str(shape), " overflows 64 bits"));
    }
  }
  return total;
}

// nlohmann keeps the last of two equal keys; in a header that silently drops a tensor entry, so
// a key seen twice in one object is an error naming it.
json parse_without_duplicate_keys(const std::string& text, const fs::path& file) {
  std::vector<std::set<std::string>> open_objects;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) {
        throw InputError(detail::concat(quoted(file), ": the header holds the key ",
                                        quote_excerpt(key), " twice"));
      }
    }
    return true;
  };
  return json::parse(text, check);
}

// Two tensors whose bytes overlap would read each other's data; empty tensors overlap nothing.
void reject_overlaps(std::span<TensorInfo> tensors, const fs::path& file) {
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : tensors) {
    if (t.nbytes > 0) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    const TensorInfo& cur = *by_offset[i];
    if (prev.offset + prev.nbytes > cur.offset) {
      throw InputError(detail::concat(
          quoted(file), ": tensors '", prev.name, "' (bytes ", prev.offset, " to ",
          prev.offset + prev.nbytes, ") and '", cur.name, "' (bytes ", cur.offset, " to ",
          cur.offset + cur.nbytes, ") overlap: their data_offsets share bytes"));
    }
  }
}

}  // namespace

SafetensorsReader SafetensorsReader::open(const fs::path& dir_or_file) {
  std::error_code ec;
  const auto status = fs::status(dir_or_file, ec);
  if (!fs::exists(status)) {
    throw InputError(detail::concat(quoted(dir_or_file), ": no such file or directory"));
  }
  SafetensorsReader reader;
  if (!fs::is_directory(status)) {
    reader.source_ = dir_or_file;
    reader.add_file(dir_or_file);
    reader.finish();
    return reader;
  }

  const fs::path index = dir_or_file / kIndexName;
  if (!fs::exists(index)) {
    const fs::path single = dir_or_file / kSingleName;
    if (!fs::exists(single)) {
      throw InputError(detail::concat(quoted(dir_or_file), ": holds neither ", kSingleName, " nor ",
                                      kIndexName));
    }
    reader.source_ = single;
    reader.add_file(single);
    reader.finish();
    return reader;
  }

  // Sharded: the index maps each tensor name to the shard file that holds it.
  reader.source_ = index;
  const json doc = parse_json_file(index, "safetensors index JSON");
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object()) {
    throw InputError(detail::concat(quoted(index), ": no \"weight_map\" object"));
  }
  std::map<std::string, std::string> weight_map;
  std::set<std::string> shards;
  for (const auto& [name, shard] : doc["weight_map"].items()) {
    if (!shard.is_string()) {
      throw InputError(
          detail::concat(quoted(index), ": weight_map[\"", name, "\"] is not a file name"));
    }
    const fs::path rel = shard.get<std::string>();
    if (rel.empty() || rel.is_absolute() || rel.has_parent_path()) {
      throw InputError(detail::concat(quoted(index), ": weight_map[\"", name, "\"] = ", quoted(rel),
                                      " is not a file name in the same directory"));
    }
    weight_map[name] = rel.string();
    shards.insert(rel.string());
  }
  if (shards.empty()) throw InputError(detail::concat(quoted(index), ": weight_map is empty"));
  for (const auto& shard : shards) {
    const fs::path file = dir_or_file / shard;
    if (!fs::exists(file)) {
      throw InputError(
          detail::concat(quoted(index), ": shard ", quoted(file), " is listed but missing"));
    }
    reader.add_file(file);
  }
  reader.finish();
  for (const auto& [name, shard] : weight_map) {
    const TensorInfo* info = reader.find(name);
    if (info == nullptr || info->file.filename() != shard) {
      throw InputError(detail::concat(quoted(index), ": tensor '", name, "' is listed in shard '",
                                      shard, "' but that file does not hold it"));
    }
  }
  return reader;
}

void SafetensorsReader::add_file(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw InputError(detail::concat(quoted(file), ": cannot open: ", std::strerror(errno)));
  }
  files_.push_back(file);
  fds_.push_back(fd);  // owned from here on, closed by the destructor even if parsing throws

  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw IoError(detail::concat(quoted(file), ": fstat failed: ", std::strerror(errno)));
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    throw InputError(detail::concat(quoted(file), ": ", file_size,
                                    " bytes is too short for a safetensors header"));
  }
  unsigned char len_bytes[8];
  pread_exact(fd, len_bytes, 8, 0, file, "the header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8) {
    throw InputError(detail::concat(quoted(file), ": header length ", header_len,
                                    " at offset 0 reaches beyond the file size ", file_size));
  }
  if (header_len > kMaxHeaderBytes) {
    throw InputError(detail::concat(quoted(file), ": header length ", header_len,
                                    " exceeds the format's limit of ", kMaxHeaderBytes));
  }
  std::string text(header_len, '\0');
  pread_exact(fd, text.data(), header_len, 8, file, "the header");
  json header;
  try {
    header = parse_without_duplicate_keys(text, file);
  } catch (const json::exception& e) {
    throw InputError(
        detail::concat(quoted(file), ": malformed safetensors header JSON: ", e.what()));
  }
  if (!header.is_object()) {
    throw InputError(detail::concat(quoted(file), ": safetensors header is not a JSON object"));
  }

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;
  const size_t first_of_file = tensors_.size();
  for (const auto& item : header.items()) {
    // Named variables, not a structured binding: the lambda below captures `name`.
    const std::string& name = item.key();
    const json& entry = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](std::string_view why) {
      return InputError(detail::concat(quoted(file), ": tensor '", name, "': ", why));
    };
    if (!entry.is_object()) throw bad("header entry is not an object");
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) throw bad("no string \"dtype\"");
    if (!entry.contains("shape") || !entry["shape"].is_array()) throw bad("no \"shape\" array");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2 || !entry["data_offsets"][0].is_number_unsigned() ||
        !entry["data_offsets"][1].is_number_unsigned()) {
      throw bad("\"data_offsets\" is not a pair of non-negative integers");
    }
    TensorInfo info;
    info.name = name;
    info.file = file;
    info.dtype = parse_stored_dtype(entry["dtype"].get<std::string>(), file, name);
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        throw bad("\"shape\" holds something other than a non-negative integer");
      }
      info.shape.push_back(d.get<int64_t>());
    }
    const uint64_t begin = entry["data_offsets"][0].get<uint64_t>();
    const uint64_t end = entry["data_offsets"][1].get<uint64_t>();
    if (begin > end) {
      throw bad(detail::concat("data_offsets [", begin, ", ", end, ") run backwards"));
    }
    if (end > data_size) {
      throw bad(detail::concat("data_offsets [", begin, ", ", end,
                               ") reach beyond the end of the file: its data region holds only ",
                               data_size, " bytes (file size ", file_size, ", data from offset ",
                               data_start, "); the file is shorter than its header says"));
    }
    info.nbytes = end - begin;
    const uint64_t expected = checked_numel_bytes(info.shape, info.dtype, file, name);
    if (info.nbytes != expected) {
      throw bad(detail::concat("holds ", info.nbytes, " bytes at offset ", data_start + begin,
                               " but shape ", shape_str(info.shape), " of ", dtype_name(info.dtype),
                               " needs ", expected));
    }
    info.offset = data_start + begin;
    tensors_.push_back(std::move(info));
  }
  reject_overlaps(std::span(tensors_).subspan(first_of_file), file);
}

void SafetensorsReader::finish() {
  // Order by file (files_ order) then offset, so iterating reads each file front to back.
  std::map<fs::path, size_t> file_rank;
  for (size_t i = 0; i < files_.size(); ++i) file_rank[files_[i]] = i;
  std::stable_sort(tensors_.begin(), tensors_.end(), [&](const auto& a, const auto& b) {
    const size_t fa = file_rank[a.file], fb = file_rank[b.file];
    return fa != fb ? fa < fb : a.offset < b.offset;
  });
  by_name_.clear();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto [it, inserted] = by_name_.emplace(tensors_[i].name, i);
    if (!inserted) {
      throw InputError(detail::concat("tensor '", tensors_[i].name, "' appears both in ",
                                      quoted(tensors_[it->second].file), " and in ",
                                      quoted(tensors_[i].file)));
    }
  }
}

SafetensorsReader::SafetensorsReader(SafetensorsReader&& other) noexcept
    : source_(std::move(other.source_)),
      files_(std::move(other.files_)),
      fds_(std::move(other.fds_)),
      tensors_(std::move(other.tensors_)),
      by_name_(std::move(other.by_name_)) {
  other.fds_.clear();
}

SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&& other) noexcept {
  if (this != &other) {
    for (int fd : fds_) ::close(fd);
    source_ = std::move(other.source_);
    files_ = std::move(other.files_);
    fds_ = std::move(other.fds_);
    tensors_ = std::move(other.tensors_);
    by_name_ = std::move(other.by_name_);
    other.fds_.clear();
  }
  return *this;
}

SafetensorsReader::~SafetensorsReader() {
  for (int fd : fds_) ::close(fd);
}

const TensorInfo* SafetensorsReader::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsReader::get(std::string_view name) const {
  const TensorInfo* info = find(name);
  if (info == nullptr) {
    throw InputError(detail::concat(quoted(source_), ": tensor '", name, "' not found"));
  }
  return *info;
}

int SafetensorsReader::fd_of(const fs::path& file) const {
  for (size_t i = 0; i < files_.size(); ++i) {
    if (files_[i] == file) return fds_[i];
  }
  throw InternalError(
      detail::concat("tensor file ", quoted(file), " is not part of checkpoint ", quoted(source_)));
}

void SafetensorsReader::read(const TensorInfo& info, DType out_dtype, void* dst) const {
  H2OFLEX_CHECK(out_dtype == DType::F32 || out_dtype == DType::F16 || out_dtype == DType::BF16,
                "cannot read tensor '", info.name, "' as ", dtype_name(out_dtype));
  const int fd = fd_of(info.file);
  const std::string what = "tensor '" + info.name + "'";
  if (out_dtype == info.dtype) {
    pread_exact(fd, dst, info.nbytes, info.offset, info.file, what);
    return;
  }
  const size_t in_size = dtype_size(info.dtype);
  const size_t out_size = dtype_size(out_dtype);
  const uint64_t numel = info.nbytes / in_size;
  const uint64_t chunk = std::max<uint64_t>(1, kStagingBytes / in_size);
  std::vector<unsigned char> staging(static_cast<size_t>(std::min(numel, chunk) * in_size));
  auto* out = static_cast<unsigned char*>(dst);
  for (uint64_t first = 0; first < numel; first += chunk) {
    const uint64_t n = std::min(chunk, numel - first);
    pread_exact(fd, staging.data(), n * in_size, info.offset + first * in_size, info.file, what);
    convert(info.dtype, staging.data(), out_dtype, out + first * out_size, n);
  }
}

Tensor SafetensorsReader::read(const TensorInfo& info, DType out_dtype) const {
  Tensor t = Tensor::empty(info.shape, out_dtype);
  read(info, out_dtype, t.raw());
  return t;
}

void check_tensor_shape(const TensorInfo& info, const Shape& expected) {
  if (info.shape != expected) {
    throw InputError(detail::concat(quoted(info.file), ": tensor '", info.name, "' has shape ",
                                    shape_str(info.shape), " but the config implies ",
                                    shape_str(expected)));
  }
}

}  // namespace h2oflex
