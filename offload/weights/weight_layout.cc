#include "offload/weights/weight_layout.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "offload/io/aligned_buffer.h"
#include "offload/weights/xxhash64.h"
#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "runtime/core/temp_file_cleanup.h"

namespace h2oflex {
namespace {

constexpr int kFormatVersion = 1;
namespace fs = std::filesystem;

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

uint64_t up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

bool same_specs(const std::vector<WeightRecord>& records, const std::vector<TensorSpec>& specs) {
  if (records.size() != specs.size()) return false;
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& a = records[i].spec;
    const TensorSpec& b = specs[i];
    if (a.name != b.name || a.shape != b.shape || a.dtype != b.dtype || a.bytes != b.bytes) {
      return false;
    }
  }
  return true;
}

struct ParsedIndex {
  std::string model_key;
  std::vector<WeightRecord> records;
  uint64_t data_bytes = 0;
};

ParsedIndex read_index(const std::string& path) {
  std::ifstream in(path);
  H2OFLEX_INPUT_CHECK(in.good(), "weight layout index '", path, "' not found");
  nlohmann::json j;
  try {
    in >> j;
    ParsedIndex out;
    const int version = j.at("format_version").get<int>();
    H2OFLEX_INPUT_CHECK(version == kFormatVersion, "weight layout index '", path,
                        "' has format_version ", version, ", expected ", kFormatVersion);
    out.model_key = j.at("model_key").get<std::string>();
    out.data_bytes = j.at("data_bytes").get<uint64_t>();
    for (const auto& t : j.at("tensors")) {
      WeightRecord r;
      r.spec.name = t.at("name").get<std::string>();
      r.spec.shape = t.at("shape").get<Shape>();
      r.spec.dtype = parse_dtype(t.at("dtype").get<std::string>());
      r.spec.bytes = t.at("bytes").get<uint64_t>();
      r.offset = t.at("offset").get<uint64_t>();
      r.checksum = std::stoull(t.at("xxh64").get<std::string>(), nullptr, 16);
      out.records.push_back(std::move(r));
    }
    return out;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(detail::concat("weight layout index '", path, "' is malformed: ", e.what()));
  }
}

// An exclusive flock on a layout directory, held while the layout is (re)built, so two runs
// building the same layout do not write one file at once. Released when the process dies.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir) : dir_(dir) {
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0)
      throw IoError(detail::concat("opening '", dir, "' to lock it: ", std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    if (errno != EWOULDBLOCK) fail("locking");
    std::fprintf(stderr, "weights: another run is building the layout in '%s'; waiting ...\n",
                 dir.c_str());
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) fail("locking");
    }
  }
  ~DirectoryLock() { ::close(fd_); }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  [[noreturn]] void fail(const char* what) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    throw IoError(detail::concat(what, " '", dir_, "': ", why));
  }
  std::string dir_;
  int fd_ = -1;
};

}  // namespace

void check_weight_checksum(const WeightRecord& record, const std::string& file, const void* data) {
  const uint64_t got = Xxh64::hash(data, record.spec.bytes);
  if (got != record.checksum) {
    throw IoError(detail::concat("checksum mismatch for weight '", record.spec.name, "' in '", file,
                                 "' at offset ", record.offset, ", length ", record.spec.bytes,
                                 ": expected xxh64 ", hex64(record.checksum), ", got ", hex64(got),
                                 " (the offload layout is corrupt; delete it to "
                                 "rebuild)"));
  }
}

void WeightLayout::write(const std::string& directory, const std::string& model_key,
                         const std::vector<TensorSpec>& specs, const TensorProducer& producer,
                         const WeightLayoutOptions& options) {
  const std::string index_path = directory + "/" + kIndexFile;
  const std::string data_path = directory + "/" + kDataFile;
  const std::string data_tmp = data_path + ".tmp";
  fs::remove(index_path);  // no index until the data is complete
  fs::remove(data_path);   // the old data is stale: do not hold two copies on the disk
  // Whatever stops the build (a full disk, a failing producer, SIGINT) must not leave a partial
  // data file filling the disk: it is removed, and only a complete one is renamed into place.
  TempFile cleanup(data_tmp);
  auto file = DiskFile::open(data_tmp, FileOpen::CreateTruncate);
  const uint64_t align = std::max<uint64_t>(options.alignment, file->block());
  uint64_t total = 0;
  for (const TensorSpec& spec : specs) total += up(spec.bytes, align);
  check_free_space(directory, total, "the weight layout '" + data_path + "'");
  // The chunk is a multiple of the alignment and of every element size (all divide 4096).
  const size_t chunk =
      static_cast<size_t>(std::max<uint64_t>(up(options.chunk_bytes, align), align));
  AlignedBuffer buffer(chunk);
  IoEngine io(options.io);
  if (options.fault_hook) io.set_fault_hook(options.fault_hook);
  io.register_buffer(buffer.data(), buffer.size());

  nlohmann::json tensors = nlohmann::json::array();
  uint64_t offset = 0;
  for (const TensorSpec& spec : specs) {
    H2OFLEX_INPUT_CHECK(
        static_cast<uint64_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype) == spec.bytes,
        "weight '", spec.name, "': shape ", shape_str(spec.shape), " of ", dtype_name(spec.dtype),
        " has ", shape_numel(spec.shape) * dtype_size(spec.dtype), " bytes, spec says ",
        spec.bytes);
    Xxh64 hash;
    for (uint64_t done = 0; done < spec.bytes; done += chunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, spec.bytes - done));
      producer(spec, done, std::span<std::byte>(reinterpret_cast<std::byte*>(buffer.data()), n));
      hash.update(buffer.data(), n);
      // Pad the last piece to the alignment; the padding lies in the gap before the next record.
      const size_t padded = static_cast<size_t>(up(n, align));
      if (padded > n) std::memset(buffer.data() + n, 0, padded - n);
      io.write(*file, offset + done, buffer.data(), padded);
    }
    tensors.push_back({{"name", spec.name},
                       {"shape", spec.shape},
                       {"dtype", std::string(dtype_name(spec.dtype))},
                       {"bytes", spec.bytes},
                       {"offset", offset},
                       {"xxh64", hex64(hash.digest())}});
    offset += up(spec.bytes, align);
  }
  file->truncate(offset);
  file->sync();
  file.reset();
  if (std::rename(data_tmp.c_str(), data_path.c_str()) != 0) {
    throw IoError(
        detail::concat("renaming '", data_tmp, "' to '", data_path, "': ", std::strerror(errno)));
  }
  cleanup.keep();

  nlohmann::json index = {{"format_version", kFormatVersion},
                          {"model_key", model_key},
                          {"alignment", align},
                          {"data_file", kDataFile},
                          {"data_bytes", offset},
                          {"checksum", "xxh64"},
                          {"tensors", tensors}};
  const std::string tmp = index_path + ".tmp";
  TempFile index_cleanup(tmp);
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << index.dump(1) << "\n";
    out.flush();
    if (!out) {
      throw IoError(detail::concat("cannot write weight layout index '", tmp, "'"));
    }
  }
  fs::rename(tmp, index_path);
  index_cleanup.keep();
}

std::unique_ptr<WeightLayout> WeightLayout::open(const std::string& directory) {
  const std::string index_path = directory + "/" + kIndexFile;
  const std::string data_path = directory + "/" + kDataFile;
  ParsedIndex parsed = read_index(index_path);
  std::unique_ptr<WeightLayout> layout(new WeightLayout());
  layout->directory_ = directory;
  layout->model_key_ = std::move(parsed.model_key);
  layout->records_ = std::move(parsed.records);
  layout->data_bytes_ = parsed.data_bytes;
  layout->file_ = DiskFile::open(data_path, FileOpen::ReadOnly);
  const uint64_t size = layout->file_->size();
  if (size < layout->data_bytes_) {
    throw IoError(detail::concat("weight layout data file '", data_path, "' is truncated: ", size,
                                 " bytes, the index needs ", layout->data_bytes_));
  }
  return layout;
}

std::unique_ptr<WeightLayout> WeightLayout::open_or_build(const std::string& directory,
                                                          const std::string& model_key,
                                                          const std::vector<TensorSpec>& specs,
                                                          const TensorProducer& producer,
                                                          WeightLayoutOptions options,
                                                          bool* rebuilt) {
  std::string reason;
  if (auto layout = open_if_matching(directory, model_key, specs, reason)) {
    if (rebuilt) *rebuilt = false;
    return layout;
  }
  fs::create_directories(directory);
  const DirectoryLock lock(directory);
  // Another run may have built it while this one waited for the lock.
  if (auto layout = open_if_matching(directory, model_key, specs, reason)) {
    if (rebuilt) *rebuilt = false;
    return layout;
  }
  if (reason != "no index") {
    std::fprintf(stderr, "note: rebuilding the weight layout in '%s': %s\n", directory.c_str(),
                 reason.c_str());
  }
  write(directory, model_key, specs, producer, options);
  if (rebuilt) *rebuilt = true;
  return open(directory);
}

std::unique_ptr<WeightLayout> WeightLayout::open_if_matching(const std::string& directory,
                                                             const std::string& model_key,
                                                             const std::vector<TensorSpec>& specs,
                                                             std::string& reason) {
  reason = "no index";
  if (!fs::exists(directory + "/" + kIndexFile)) return nullptr;
  try {
    auto layout = open(directory);
    if (layout->model_key() != model_key) {
      reason = detail::concat("model key '", layout->model_key(), "' != '", model_key, "'");
    } else if (!same_specs(layout->records(), specs)) {
      reason = "same model key but a different tensor list";
    } else {
      return layout;
    }
  } catch (const std::exception& e) {
    reason = e.what();
  }
  return nullptr;
}

size_t WeightLayout::find(const std::string& name) const {
  for (size_t i = 0; i < records_.size(); ++i) {
    if (records_[i].spec.name == name) return i;
  }
  throw InputError(detail::concat("weight '", name, "' is not in the layout '", directory_, "'"));
}

void WeightLayout::verify_all(IoEngine& io) {
  const size_t block = file_->block();
  const size_t chunk = size_t{16} << 20;
  AlignedBuffer buffer(chunk);
  for (const WeightRecord& r : records_) {
    Xxh64 hash;
    for (uint64_t done = 0; done < r.spec.bytes; done += chunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, r.spec.bytes - done));
      io.read(*file_, r.offset + done, buffer.data(), (n + block - 1) / block * block);
      hash.update(buffer.data(), n);
    }
    if (hash.digest() != r.checksum) {
      throw IoError(detail::concat("checksum mismatch for weight '", r.spec.name, "' in '",
                                   file_->path(), "' at offset ", r.offset, ", length ",
                                   r.spec.bytes, ": expected xxh64 ", hex64(r.checksum), ", got ",
                                   hex64(hash.digest())));
    }
  }
}

}  // namespace h2oflex
