// How fast this machine streams RAM: the limit a memory-bound step (a decode step reading every
// weight once) is compared with.
#pragma once

#include <cstdint>

namespace h2oflex {

struct MemoryRates {
  double copy_bps = 0;  // bytes copied per second between two buffers (memcpy)
  double read_bps = 0;  // bytes read per second (a sum over one buffer)
};

// Medians of `repeats` passes over buffers of `bytes` (touched first, so no page fault is
// timed). `parallel`: the buffers are split over the OpenMP threads, the rate the compute
// threads reach together; otherwise one thread, as a transfer queue copies.
MemoryRates measure_memory_rates(uint64_t bytes, int repeats, bool parallel);

}  // namespace h2oflex
