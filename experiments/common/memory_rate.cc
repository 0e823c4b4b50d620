#include "experiments/common/memory_rate.h"

#include <omp.h>

#include <cstring>

#include "experiments/common/bench_timing.h"
#include "offload/io/aligned_buffer.h"

namespace h2oflex {

namespace {

// Calls fn(offset, length) for this thread's share of `bytes` (whole 4 KiB pages).
template <typename Fn>
void for_share(uint64_t bytes, bool parallel, Fn&& fn) {
  if (!parallel) {
    fn(uint64_t{0}, bytes);
    return;
  }
#pragma omp parallel
  {
    const uint64_t pages = bytes / 4096, n = static_cast<uint64_t>(omp_get_num_threads());
    const uint64_t i = static_cast<uint64_t>(omp_get_thread_num());
    const uint64_t first = pages * i / n * 4096;
    const uint64_t last = i + 1 == n ? bytes : pages * (i + 1) / n * 4096;
    fn(first, last - first);
  }
}

}  // namespace

MemoryRates measure_memory_rates(uint64_t bytes, int repeats, bool parallel) {
  AlignedBuffer a(bytes), b(bytes);
  // Touched by the threads that will stream them (first touch places the pages).
  for_share(bytes, parallel, [&](uint64_t off, uint64_t len) {
    std::memset(a.data() + off, 1, len);
    std::memset(b.data() + off, 2, len);
  });
  MemoryRates r;
  r.copy_bps = bytes / median_seconds(repeats, [&] {
                 for_share(bytes, parallel, [&](uint64_t off, uint64_t len) {
                   std::memcpy(b.data() + off, a.data() + off, len);
                 });
               });
  volatile uint64_t sink = 0;  // keeps the sums from being optimised away
  r.read_bps = bytes / median_seconds(repeats, [&] {
                 for_share(bytes, parallel, [&](uint64_t off, uint64_t len) {
                   const uint64_t* p = reinterpret_cast<const uint64_t*>(a.data() + off);
                   uint64_t s = 0;
#pragma omp simd reduction(+ : s)
                   for (uint64_t i = 0; i < len / 8; ++i) s += p[i];
                   sink = sink + s;
                 });
               });
  return r;
}

}  // namespace h2oflex
