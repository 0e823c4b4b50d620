// bench-io: sequential write and read throughput of the io_uring engine on a fresh file, side by
// side with fio (io_uring, O_DIRECT, same file, size, block size and queue depth) when installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace h2oflex {

struct BenchIoOptions {
  std::string path;  // directory in which the test file is created (and removed)
  uint64_t size_bytes = uint64_t{4} << 30;
  size_t chunk = size_t{1} << 20;
  unsigned queue_depth = 32;
  std::string json_out;  // write results here when not empty
};

struct BenchIoResult {
  double write_gbps = 0;  // 1e9 bytes per second
  double read_gbps = 0;
  bool fio_ran = false;
  double fio_write_gbps = 0;
  double fio_read_gbps = 0;
};

// Runs the benchmark, prints a table and writes the JSON; returns the figures.
BenchIoResult measure_io(const BenchIoOptions& options);
// CLI entry: returns the exit code (0; errors propagate as exceptions).
int run_bench_io(const BenchIoOptions& options);

}  // namespace h2oflex
