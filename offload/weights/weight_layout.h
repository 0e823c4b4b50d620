// The on-disk offload layout of a model's weights: one data file of aligned records plus a JSON
// index (name, shape, dtype, offset, size, xxh64 checksum, model key).
//
// Written tensor by tensor, chunk by chunk, so memory stays bounded by one chunk whatever the
// model size. The data goes to a temp file renamed into place when complete (removed when the
// build fails, e.g. on a full disk), and the index is written last (temp file + rename), so a
// layout interrupted while being written has no index and is rebuilt. A layout is reused when its
// index names the same model key and the same tensor list and the data file is complete. A build
// holds an exclusive lock on the directory: a second run building the same layout waits for it
// and then reuses what it wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "offload/io/disk_file.h"
#include "offload/io/io_engine.h"
#include "runtime/core/dtype.h"
#include "runtime/core/tensor.h"

namespace h2oflex {

struct TensorSpec {
  std::string name;
  Shape shape;
  DType dtype = DType::F16;
  uint64_t bytes = 0;  // numel * dtype_size
};

struct WeightRecord {
  TensorSpec spec;
  uint64_t offset = 0;    // in the data file, aligned
  uint64_t checksum = 0;  // xxh64 (seed 0) of the tensor's bytes
};

// Fills `out` with bytes [byte_offset, byte_offset + out.size()) of tensor `spec`. Called with
// consecutive ranges; byte_offset is a multiple of the element size.
using TensorProducer =
    std::function<void(const TensorSpec& spec, uint64_t byte_offset, std::span<std::byte> out)>;

struct WeightLayoutOptions {
  size_t alignment = 4096;                // record alignment (raised to the file's block)
  size_t chunk_bytes = size_t{64} << 20;  // producer chunk: bounds memory while writing
  IoEngineOptions io;
  std::shared_ptr<IoFaultHook> fault_hook;  // sees the writes of a build (tests inject ENOSPC)
};

class WeightLayout {
 public:
  static constexpr const char* kDataFile = "weights.bin";
  static constexpr const char* kIndexFile = "weights.index.json";

  // Opens the layout in `directory` if its index matches `model_key` and `specs`, else writes it
  // (creating the directory) under the directory's lock. `rebuilt`, when given, tells which
  // happened.
  static std::unique_ptr<WeightLayout> open_or_build(const std::string& directory,
                                                     const std::string& model_key,
                                                     const std::vector<TensorSpec>& specs,
                                                     const TensorProducer& producer,
                                                     WeightLayoutOptions options = {},
                                                     bool* rebuilt = nullptr);
  // Opens an existing layout; throws InputError when the index is missing or malformed and
  // IoError when the data file is shorter than the index says.
  static std::unique_ptr<WeightLayout> open(const std::string& directory);

  const std::string& model_key() const { return model_key_; }
  const std::string& directory() const { return directory_; }
  const std::vector<WeightRecord>& records() const { return records_; }
  const WeightRecord& record(size_t i) const { return records_.at(i); }
  // Index of a tensor by name; throws InputError naming it when absent.
  size_t find(const std::string& name) const;
  DiskFile& file() { return *file_; }
  uint64_t data_bytes() const { return data_bytes_; }  // file length the index requires

  // Reads every record and compares checksums; throws IoError naming the first bad tensor.
  void verify_all(IoEngine& io);

 private:
  WeightLayout() = default;
  // The layout in `directory` when it matches; else null with `reason` saying why not.
  static std::unique_ptr<WeightLayout> open_if_matching(const std::string& directory,
                                                        const std::string& model_key,
                                                        const std::vector<TensorSpec>& specs,
                                                        std::string& reason);
  static void write(const std::string& directory, const std::string& model_key,
                    const std::vector<TensorSpec>& specs, const TensorProducer& producer,
                    const WeightLayoutOptions& options);

  std::string directory_;
  std::string model_key_;
  std::vector<WeightRecord> records_;
  uint64_t data_bytes_ = 0;
  std::unique_ptr<DiskFile> file_;
};

// Throws IoError when `checksum` of `data` differs from the record's.
void check_weight_checksum(const WeightRecord& record, const std::string& file, const void* data);

}  // namespace h2oflex
