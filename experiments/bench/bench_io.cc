#include "experiments/bench/bench_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "experiments/common/child_process.h"
#include "experiments/common/output_paths.h"
#include "offload/io/aligned_buffer.h"
#include "offload/io/disk_file.h"
#include "offload/io/io_engine.h"
#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "runtime/core/temp_file_cleanup.h"
#include "runtime/core/timer.h"

namespace h2oflex {
namespace {

// Each engine call moves this much, so the ring drains only once per call, as a large weight or
// cache transfer would.
constexpr size_t kCallBytes = size_t{256} << 20;

bool fio_on_path() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string all(path);
  size_t start = 0;
  while (start <= all.size()) {
    size_t end = all.find(':', start);
    if (end == std::string::npos) end = all.size();
    const std::string candidate = all.substr(start, end - start) + "/fio";
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Runs fio once and returns its bandwidth in bytes per second.
double run_fio(const std::string& file, bool write, const BenchIoOptions& o) {
  const ChildResult fio = run_child(
      {"fio", "--name=h2oflex-bench-io", "--ioengine=io_uring", "--direct=1",
       std::string("--rw=") + (write ? "write" : "read"), detail::concat("--bs=", o.chunk),
       detail::concat("--iodepth=", o.queue_depth), detail::concat("--size=", o.size_bytes),
       "--filename=" + file, "--output-format=json"});
  const int status = fio.exit_code;
  const std::string& output = fio.output;
  const size_t brace = output.find('{');
  if (status != 0 || brace == std::string::npos) {
    throw IoError(detail::concat("fio failed (status ", status, "): ", output.substr(0, 2000)));
  }
  const auto j = nlohmann::json::parse(output.substr(brace));
  return j.at("jobs").at(0).at(write ? "write" : "read").at("bw_bytes").get<double>();
}

}  // namespace

BenchIoResult measure_io(const BenchIoOptions& o) {
  H2OFLEX_INPUT_CHECK(!o.path.empty(), "bench-io: --path is required");
  H2OFLEX_INPUT_CHECK(std::filesystem::is_directory(o.path), "bench-io: --path '", o.path,
                      "' is not a directory");
  H2OFLEX_INPUT_CHECK(o.chunk >= 4096 && o.chunk % 4096 == 0,
                      "bench-io: chunk must be a positive multiple of 4096, got ", o.chunk);
  H2OFLEX_INPUT_CHECK(o.size_bytes >= o.chunk && o.size_bytes % o.chunk == 0,
                      "bench-io: size must be a positive multiple of the chunk (", o.chunk,
                      "), got ", o.size_bytes);
  const std::string file_path = detail::concat(o.path, "/h2oflex-bench-io-", ::getpid(), ".bin");
  check_output_paths({}, {{"--json", o.json_out}, {"the test file", file_path}});
  check_free_space(o.path, o.size_bytes, "bench-io: the test file (--size)",
                   "choose a smaller --size or another --path");
  // Removed on every way out, SIGINT and SIGTERM included.
  const TempFile remove_file(file_path);

  IoEngineOptions io_options;
  io_options.chunk_bytes = o.chunk;
  io_options.queue_depth = o.queue_depth;
  IoEngine io(io_options);
  const size_t call = static_cast<size_t>(std::min<uint64_t>(kCallBytes, o.size_bytes));
  AlignedBuffer buffer(call);
  {  // incompressible contents
    std::mt19937_64 rng(1);
    auto* words = reinterpret_cast<uint64_t*>(buffer.data());
    for (size_t i = 0; i < call / 8; ++i) words[i] = rng();
  }
  io.register_buffer(buffer.data(), buffer.size());

  BenchIoResult r;
  const bool fio = fio_on_path();
  {
    auto file = DiskFile::open(file_path, FileOpen::CreateTruncate);
    // Reserve the blocks up front, untimed, as fio does (its default fallocate=native).
    reserve_file_blocks(file->fd(), file_path, o.size_bytes);
    const Stopwatch watch;
    for (uint64_t done = 0; done < o.size_bytes; done += call) {
      io.write(*file, done, buffer.data(),
               static_cast<size_t>(std::min<uint64_t>(call, o.size_bytes - done)));
    }
    // O_DIRECT data is on the device already; fio does no fsync either, so keep it untimed.
    r.write_gbps = o.size_bytes / watch.elapsed() / 1e9;
    file->sync();
  }
  if (fio) {
    std::remove(file_path.c_str());  // fio writes a fresh file too

    r.fio_write_gbps = run_fio(file_path, true, o) / 1e9;
    r.fio_ran = true;
  }
  auto engine_read = [&] {
    auto file = DiskFile::open(file_path, FileOpen::ReadOnly);
    const Stopwatch watch;
    for (uint64_t done = 0; done < o.size_bytes; done += call) {
      io.read(*file, done, buffer.data(),
              static_cast<size_t>(std::min<uint64_t>(call, o.size_bytes - done)));
    }
    return o.size_bytes / watch.elapsed() / 1e9;
  };
  if (fio) {
    // ABBA order: a virtual disk's host may cache what was read last, which would favour
    // whoever reads second; each side reads once first and once second, and reports the mean.
    const double fio_first = run_fio(file_path, false, o) / 1e9;
    const double ours_second = engine_read();
    const double ours_first = engine_read();
    const double fio_second = run_fio(file_path, false, o) / 1e9;
    r.read_gbps = (ours_first + ours_second) / 2;
    r.fio_read_gbps = (fio_first + fio_second) / 2;
  } else {
    r.read_gbps = engine_read();
  }

  std::printf("bench-io: %s file in %s, chunk %zu bytes, queue depth %u (GB/s = 1e9 bytes/s)\n",
              std::to_string(o.size_bytes).c_str(), o.path.c_str(), o.chunk, o.queue_depth);
  std::printf("%-6s %12s %12s %8s\n", "", "h2oflex GB/s", "fio GB/s", "ratio");
  auto row = [&](const char* name, double ours, double theirs) {
    if (r.fio_ran) {
      std::printf("%-6s %12.3f %12.3f %8.3f\n", name, ours, theirs, ours / theirs);
    } else {
      std::printf("%-6s %12.3f %12s %8s\n", name, ours, "-", "-");
    }
  };
  row("write", r.write_gbps, r.fio_write_gbps);
  row("read", r.read_gbps, r.fio_read_gbps);
  if (!r.fio_ran) std::printf("(fio not found on PATH: no comparison)\n");

  if (!o.json_out.empty()) {
    nlohmann::json j = {{"read_gbps", r.read_gbps},   {"write_gbps", r.write_gbps},
                        {"chunk_bytes", o.chunk},     {"queue_depth", o.queue_depth},
                        {"size_bytes", o.size_bytes}, {"gbps_definition", "1e9 bytes/s"}};
    if (r.fio_ran) {
      j["fio_read_gbps"] = r.fio_read_gbps;
      j["fio_write_gbps"] = r.fio_write_gbps;
      j["read_ratio"] = r.read_gbps / r.fio_read_gbps;
      j["write_ratio"] = r.write_gbps / r.fio_write_gbps;
    }
    write_file_atomically(o.json_out, j.dump(2) + "\n");
  }
  return r;
}

int run_bench_io(const BenchIoOptions& options) {
  measure_io(options);
  return 0;
}

}  // namespace h2oflex
