#include "models/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/quote.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "GGUF is little-endian here; a big-endian host would need byte swapping");

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxArrayDepth = 4;        // arrays of arrays; deeper is corrupt, not a model
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr uint64_t kReadChunk = 1ull << 20;
// Metadata values (array elements included) a file may hold: a large vocabulary's tokens,
// scores, types and merges are about a million; the bound keeps a corrupt count from taking
// gigabytes of RAM (each value is held as a GgufValue).
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 22;

std::string quoted(const fs::path& p) {
  return detail::concat("'", p.string(), "'");
}

void pread_exact(int fd, void* dst, uint64_t n, uint64_t offset, const fs::path& file,
                 std::string_view what) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(n, 1ull << 30));
    const ssize_t got = ::pread(fd, p, want, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError(detail::concat(quoted(file), ": reading ", what, " at byte offset ", offset,
                                   ": ", std::strerror(errno)));
    }
    if (got == 0) {
      throw IoError(detail::concat(quoted(file), ": unexpected end of file at byte offset ", offset,
                                   " while reading ", what,
                                   " (the file changed after it was opened?)"));
    }
    p += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
}

// The smallest encoding of one value of `t` (an array: its type and count), to bound counts by
// the bytes left before allocating.
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
    case GgufType::kString:
      return 8;
    case GgufType::kArray:
      return 12;
  }
  return 1;
}

bool known_type(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufType::kF64);
}

// Sequential reads through a buffer, every length checked against the file's size first.
class Cursor {
 public:
  Cursor(int fd, uint64_t size, const fs::path& file) : fd_(fd), size_(size), file_(file) {}

  uint64_t pos() const { return pos_; }
  // Counts one more metadata value; false past kMaxMetadataValues.
  bool count_value() { return ++values_ <= kMaxMetadataValues; }
  const fs::path& file() const { return file_; }
  uint64_t left() const { return size_ - pos_; }

  // `context` says what is being read, e.g. "metadata key 'general.name' (at byte offset 24)".
  void need(uint64_t n, const std::string& context, std::string_view what) const {
    if (n > left()) {
      throw InputError(detail::concat(quoted(file_), ": ", context, ": ", what, " at byte offset ",
                                      pos_, " needs ", n, " bytes, but the file ends at byte ",
                                      size_, " (truncated or corrupt)"));
    }
  }

  void read(void* dst, uint64_t n, const std::string& context, std::string_view what) {
    need(n, context, what);
    auto* out = static_cast<char*>(dst);
    while (n > 0) {
      if (buf_pos_ == buf_.size()) refill();
      const uint64_t take = std::min<uint64_t>(n, buf_.size() - buf_pos_);
      std::memcpy(out, buf_.data() + buf_pos_, take);
      out += take;
      buf_pos_ += take;
      pos_ += take;
      n -= take;
    }
  }

  template <typename T>
  T scalar(const std::string& context, std::string_view what) {
    T v;
    read(&v, sizeof(T), context, what);
    return v;
  }

  std::string string(const std::string& context, std::string_view what) {
    const uint64_t at = pos_;
    const uint64_t n = scalar<uint64_t>(context, what);
    if (n > left()) {
      throw InputError(detail::concat(quoted(file_), ": ", context, ": ", what, " at byte offset ",
                                      at, " has length ", n, ", past the end of the file (", left(),
                                      " bytes left)"));
    }
    std::string s(static_cast<size_t>(n), '\0');
    read(s.data(), n, context, what);
    return s;
  }

 private:
  void refill() {
    const uint64_t n = std::min<uint64_t>(kReadChunk, left());
    buf_.resize(static_cast<size_t>(n));
    pread_exact(fd_, buf_.data(), n, pos_, file_, "the header");
    buf_pos_ = 0;
  }

  int fd_;
  uint64_t size_;
  const fs::path& file_;
  uint64_t pos_ = 0;
  uint64_t values_ = 0;
  std::vector<char> buf_;
  size_t buf_pos_ = 0;
};

GgufValue read_value(Cursor& in, GgufType type, const std::string& context, int depth) {
  GgufValue v;
  v.type = type;
  v.offset = in.pos();
  if (!in.count_value()) {
    throw InputError(detail::concat(quoted(in.file()), ": ", context, ": more than ",
                                    kMaxMetadataValues, " metadata values (at byte offset ",
                                    v.offset, "); not a model's metadata"));
  }
  switch (type) {
    case GgufType::kU8:
      v.value = uint64_t{in.scalar<uint8_t>(context, "a u8")};
      break;
    case GgufType::kU16:
      v.value = uint64_t{in.scalar<uint16_t>(context, "a u16")};
      break;
    case GgufType::kU32:
      v.value = uint64_t{in.scalar<uint32_t>(context, "a u32")};
      break;
    case GgufType::kU64:
      v.value = in.scalar<uint64_t>(context, "a u64");
      break;
    case GgufType::kI8:
      v.value = int64_t{in.scalar<int8_t>(context, "an i8")};
      break;
    case GgufType::kI16:
      v.value = int64_t{in.scalar<int16_t>(context, "an i16")};
      break;
    case GgufType::kI32:
      v.value = int64_t{in.scalar<int32_t>(context, "an i32")};
      break;
    case GgufType::kI64:
      v.value = in.scalar<int64_t>(context, "an i64");
      break;
    case GgufType::kF32:
      v.value = double{in.scalar<float>(context, "an f32")};
      break;
    case GgufType::kF64:
      v.value = in.scalar<double>(context, "an f64");
      break;
    case GgufType::kBool: {
      const uint8_t b = in.scalar<uint8_t>(context, "a bool");
      if (b > 1) {
        throw InputError(detail::concat(quoted(in.file()), ": ", context,
                                        ": a bool at byte offset ", v.offset, " holds ", int(b),
                                        " (0 or 1 expected)"));
      }
      v.value = b == 1;
      break;
    }
    case GgufType::kString:
      v.value = in.string(context, "a string");
      break;
    case GgufType::kArray: {
      if (depth >= kMaxArrayDepth) {
        throw InputError(detail::concat(quoted(in.file()), ": ", context,
                                        ": arrays nested deeper than ", kMaxArrayDepth,
                                        " at byte offset ", v.offset));
      }
      const uint32_t element = in.scalar<uint32_t>(context, "an array's element type");
      if (!known_type(element)) {
        throw InputError(
            detail::concat(quoted(in.file()), ": ", context, ": an array at byte offset ", v.offset,
                           " has element type ", element, ", which GGUF does not define"));
      }
      v.element_type = static_cast<GgufType>(element);
      const uint64_t count_at = in.pos();
      const uint64_t count = in.scalar<uint64_t>(context, "an array's length");
      const uint64_t smallest = min_value_bytes(v.element_type);
      if (count > in.left() / smallest) {
        throw InputError(detail::concat(quoted(in.file()), ": ", context, ": the array length ",
                                        count, " at byte offset ", count_at, " needs at least ",
                                        smallest, " bytes each, past ", "the end of the file (",
                                        in.left(), " bytes left)"));
      }
      std::vector<GgufValue> items;
      items.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) {
        items.push_back(read_value(in, v.element_type, context, depth + 1));
      }
      v.value = std::move(items);
      break;
    }
  }
  return v;
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::kU8:
      return "u8";
    case GgufType::kI8:
      return "i8";
    case GgufType::kU16:
      return "u16";
    case GgufType::kI16:
      return "i16";
    case GgufType::kU32:
      return "u32";
    case GgufType::kI32:
      return "i32";
    case GgufType::kF32:
      return "f32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kU64:
      return "u64";
    case GgufType::kI64:
      return "i64";
    case GgufType::kF64:
      return "f64";
  }
  return "?";
}

bool GgufValue::is_integer() const {
  return std::holds_alternative<uint64_t>(value) || std::holds_alternative<int64_t>(value);
}

uint64_t GgufTensorInfo::numel() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // checked for overflow when the file was opened
  return n;
}

std::vector<int64_t> GgufTensorInfo::shape() const {
  return std::vector<int64_t>(dims.rbegin(), dims.rend());
}

GgufFile GgufFile::open(const fs::path& file) {
  GgufFile g;
  g.path_ = file;
  g.fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (g.fd_ < 0) {
    if (errno == ENOENT) throw InputError(detail::concat(quoted(file), ": GGUF file not found"));
    throw InputError(
        detail::concat(quoted(file), ": cannot open the GGUF file: ", std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(g.fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw InputError(detail::concat(quoted(file), ": not a regular file"));
  }
  g.file_size_ = static_cast<uint64_t>(st.st_size);

  Cursor in(g.fd_, g.file_size_, g.path_);
  const std::string header = "the header";
  const uint32_t magic = in.scalar<uint32_t>(header, "the magic");
  H2OFLEX_INPUT_CHECK(magic == kMagic, quoted(file),
                      ": not a GGUF file (the first 4 bytes are not ", "'GGUF')");
  g.version_ = in.scalar<uint32_t>(header, "the version");
  H2OFLEX_INPUT_CHECK(g.version_ == 2 || g.version_ == 3, quoted(file), ": GGUF version ",
                      g.version_, " at byte offset 4; versions 2 and 3 are read");
  const uint64_t tensor_count = in.scalar<uint64_t>(header, "the tensor count");
  const uint64_t kv_count = in.scalar<uint64_t>(header, "the metadata count");
  // Each entry needs at least a key length, a type and a value; each tensor info a name
  // length, a dim count, one dim, a type and an offset.
  H2OFLEX_INPUT_CHECK(kv_count <= in.left() / 13, quoted(file), ": the metadata count ", kv_count,
                      " at byte offset 16 is more than the file (", g.file_size_,
                      " bytes) can hold");
  H2OFLEX_INPUT_CHECK(tensor_count <= in.left() / 32, quoted(file), ": the tensor count ",
                      tensor_count, " at byte offset 8 is more than the file (", g.file_size_,
                      " bytes) can hold");

  for (uint64_t i = 0; i < kv_count; ++i) {
    const uint64_t at = in.pos();
    const std::string key = in.string(detail::concat("metadata entry ", i), "its key");
    const std::string context =
        detail::concat("metadata key ", quote_excerpt(key), " (at byte offset ", at, ")");
    const uint32_t type = in.scalar<uint32_t>(context, "its value type");
    if (!known_type(type)) {
      throw InputError(detail::concat(quoted(file), ": ", context, ": value type ", type,
                                      " is not one GGUF defines (0 to 12)"));
    }
    GgufValue v = read_value(in, static_cast<GgufType>(type), context, 0);
    if (!g.metadata_.emplace(key, std::move(v)).second) {
      throw InputError(detail::concat(quoted(file), ": ", context, ": the key appears twice"));
    }
  }

  if (const GgufValue* a = g.find("general.alignment")) {
    if (a->type != GgufType::kU32) g.key_error("general.alignment", "must be a u32");
    g.alignment_ = std::get<uint64_t>(a->value);
    if (g.alignment_ == 0 || (g.alignment_ & (g.alignment_ - 1)) != 0) {
      g.key_error("general.alignment",
                  detail::concat("is ", g.alignment_, "; it must be a power of two"));
    }
  }

  std::vector<uint64_t> relative(static_cast<size_t>(tensor_count));
  g.tensors_.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    t.info_offset = in.pos();
    t.name = in.string(detail::concat("tensor info ", i), "its name");
    const std::string context = detail::concat("tensor ", quote_excerpt(t.name),
                                               " (info at byte offset ", t.info_offset, ")");
    const uint32_t n_dims = in.scalar<uint32_t>(context, "its dim count");
    if (n_dims == 0 || n_dims > kMaxDims) {
      throw InputError(detail::concat(quoted(file), ": ", context, ": ", n_dims, " dims; 1 to ",
                                      kMaxDims, " expected"));
    }
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = in.scalar<uint64_t>(context, "a dim");
      if (dim == 0 || dim > uint64_t(INT64_MAX)) {
        throw InputError(detail::concat(quoted(file), ": ", context, ": dim ", d, " is ", dim,
                                        "; dims must be positive and below 2^63"));
      }
      if (__builtin_mul_overflow(numel, dim, &numel) || numel > uint64_t(INT64_MAX)) {
        throw InputError(
            detail::concat(quoted(file), ": ", context, ": the dims' product overflows 63 bits"));
      }
      t.dims.push_back(dim);
    }
    const uint64_t type_at = in.pos();
    const uint32_t type = in.scalar<uint32_t>(context, "its type");
    t.format = block_format_by_ggml_type(type);
    if (t.format == nullptr) {
      throw InputError(detail::concat(quoted(file), ": ", context, ": type id ", type,
                                      " at byte offset ", type_at, " is not a ggml type"));
    }
    if (t.dims[0] % t.format->block_values != 0) {
      throw InputError(detail::concat(quoted(file), ": ", context, ": its rows of ", t.dims[0],
                                      " values are not whole ", t.format->name, " blocks of ",
                                      t.format->block_values));
    }
    const uint64_t blocks = numel / t.format->block_values;
    if (__builtin_mul_overflow(blocks, uint64_t{t.format->block_bytes}, &t.nbytes)) {
      throw InputError(detail::concat(quoted(file), ": ", context, ": its size overflows 64 bits"));
    }
    const uint64_t offset_at = in.pos();
    relative[i] = in.scalar<uint64_t>(context, "its data offset");
    if (relative[i] % g.alignment_ != 0) {
      throw InputError(detail::concat(quoted(file), ": ", context, ": data offset ", relative[i],
                                      " (at byte offset ", offset_at,
                                      ") is not a multiple of the alignment ", g.alignment_));
    }
    if (!g.by_name_.emplace(t.name, g.tensors_.size()).second) {
      throw InputError(
          detail::concat(quoted(file), ": ", context, ": a second tensor of this name"));
    }
    g.tensors_.push_back(std::move(t));
  }

  g.data_offset_ = (in.pos() + g.alignment_ - 1) / g.alignment_ * g.alignment_;
  H2OFLEX_INPUT_CHECK(g.data_offset_ >= in.pos(), quoted(file), ": the data offset overflows");
  // Every tensor inside the file, and no two sharing a byte.
  std::vector<size_t> order(g.tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    GgufTensorInfo& t = g.tensors_[i];
    const uint64_t data_left = g.file_size_ - std::min(g.file_size_, g.data_offset_);
    if (relative[i] > data_left || t.nbytes > data_left - relative[i]) {
      throw InputError(detail::concat(
          quoted(file), ": tensor ", quote_excerpt(t.name), " (info at byte offset ", t.info_offset,
          "): its data (", t.nbytes, " bytes at byte offset ", g.data_offset_ + relative[i],
          ") runs past the end of the file (", g.file_size_, " bytes)"));
    }
    t.offset = g.data_offset_ + relative[i];
    order[i] = i;
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return g.tensors_[a].offset < g.tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = g.tensors_[order[k - 1]];
    const GgufTensorInfo& t = g.tensors_[order[k]];
    if (t.offset < prev.offset + prev.nbytes) {
      throw InputError(detail::concat(quoted(file), ": tensor ", quote_excerpt(t.name),
                                      " (data at byte offset ", t.offset, ") overlaps tensor ",
                                      quote_excerpt(prev.name), " (", prev.nbytes,
                                      " bytes at byte offset ", prev.offset, ")"));
    }
  }
  return g;
}

GgufFile::GgufFile(GgufFile&& other) noexcept {
  *this = std::move(other);
}

GgufFile& GgufFile::operator=(GgufFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    version_ = other.version_;
    alignment_ = other.alignment_;
    data_offset_ = other.data_offset_;
    file_size_ = other.file_size_;
    metadata_ = std::move(other.metadata_);
    tensors_ = std::move(other.tensors_);
    by_name_ = std::move(other.by_name_);
  }
  return *this;
}

GgufFile::~GgufFile() {
  if (fd_ >= 0) ::close(fd_);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

std::string GgufFile::where(std::string_view what) const {
  return detail::concat(quoted(path_), ": ", what);
}

void GgufFile::key_error(std::string_view key, std::string_view why) const {
  const GgufValue* v = find(key);
  if (v == nullptr) {
    throw InputError(detail::concat(quoted(path_), ": metadata key '", key, "' ", why));
  }
  throw InputError(detail::concat(quoted(path_), ": metadata key '", key, "' (at byte offset ",
                                  v->offset, ", a ", gguf_type_name(v->type), ") ", why));
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::read_raw(const GgufTensorInfo& info, void* dst) const {
  pread_exact(fd_, dst, info.nbytes, info.offset, path_,
              detail::concat("tensor ", quote_excerpt(info.name)));
}

void require_unpackable(const GgufFile& file, const GgufTensorInfo& info) {
  if (info.format->unpack != nullptr) return;
  throw InputError(file.where(detail::concat(
      "tensor ", quote_excerpt(info.name), " has type ", info.format->name,
      ", which h2oflex does not read (it reads ", readable_block_format_list(), ")")));
}

void GgufFile::read_f32(const GgufTensorInfo& info, float* dst) const {
  read_f32_rows(info, 0, info.numel() / info.dims[0], dst);
}

void GgufFile::read_f32_rows(const GgufTensorInfo& info, uint64_t first, uint64_t count,
                             float* dst) const {
  require_unpackable(*this, info);
  const BlockFormat& f = *info.format;
  const uint64_t blocks_per_row = info.dims[0] / f.block_values;  // whole: checked at open
  H2OFLEX_CHECK(first + count <= info.numel() / info.dims[0], "rows past the tensor's end");
  // A few MiB of stored blocks at a time: RAM beyond `dst` stays bounded.
  const uint64_t blocks_per_chunk = std::max<uint64_t>(1, (4ull << 20) / f.block_bytes);
  const uint64_t begin = first * blocks_per_row, blocks = count * blocks_per_row;
  std::vector<uint8_t> staging(
      static_cast<size_t>(std::min(blocks, blocks_per_chunk) * f.block_bytes));
  for (uint64_t done = 0; done < blocks; done += blocks_per_chunk) {
    const uint64_t n = std::min(blocks_per_chunk, blocks - done);
    pread_exact(fd_, staging.data(), n * f.block_bytes,
                info.offset + (begin + done) * f.block_bytes, path_,
                detail::concat("tensor ", quote_excerpt(info.name)));
    f.unpack(staging.data(), dst + done * f.block_values, static_cast<size_t>(n));
  }
}

}  // namespace h2oflex
