// `h2oflex bench decode`: a decode step in RAM against the time to stream what it must read.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/bench/bench_gemm.h"
#include "models/opt/opt_config.h"
#include "runtime/ops/ops.h"

namespace h2oflex {

// `batch` prompts of `len` token ids of a dummy model (ids 4 .. vocab - 1, fixed by sequence and
// position): the inputs of every compute benchmark.
std::vector<std::vector<int32_t>> bench_prompts(int64_t vocab, int batch, int len);

// Runs a batch's prefill, then times each of its gen_len - 1 decode steps, between two
// measurements of the memory rates (all threads), and compares the steps with streaming the
// weights once (and the weights plus the cache's filled rows) at those rates.
int bench_decode(const BenchComputeOptions& options, const OptConfig& cfg, ops::ComputeType ct);

}  // namespace h2oflex
