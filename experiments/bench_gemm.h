// `h2oflex bench gemm` and `h2oflex bench prefill`: compute-rate benchmarks.
#pragma once

#include <string>

namespace h2oflex {

struct BenchComputeOptions {
  std::string what;                // "gemm" or "prefill"
  std::string model = "opt-6.7b";  // gemm: shapes of this model; prefill: the model to run
  int batch = 8;
  int prompt_len = 512;
  int repeats = 5;
  std::string compute_dtype = "auto";
  std::string json_out;
};

int run_bench_compute(const BenchComputeOptions& options);

}  // namespace h2oflex
