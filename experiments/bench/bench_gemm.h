// `h2oflex bench gemm | prefill | decode`: compute-rate benchmarks.
#pragma once

#include <cstdint>
#include <string>

namespace h2oflex {

struct BenchComputeOptions {
  std::string what;                // "gemm", "prefill" or "decode"
  std::string model = "opt-6.7b";  // gemm: shapes of this model; prefill, decode: the model run
  int batch = 8;
  int prompt_len = 512;
  int gen_len = 32;  // decode: the steps are gen_len - 1
  int repeats = 5;
  std::string compute_dtype = "auto";
  std::string json_out;
  // decode: the buffers of the memory-rate measurement, far larger than the last-level cache
  // so the rates are DRAM's (tests shrink them)
  uint64_t memory_rate_bytes = 512ull << 20;
};

int run_bench_compute(const BenchComputeOptions& options);

}  // namespace h2oflex
