// When a CPU loop is worth a parallel region.
#pragma once

#include <cstdint>

namespace h2oflex::cpu {

// Loops over at most this many elements run on the calling thread: waking the other threads
// costs more than such a loop. A parallel region took 35-50 µs on a 2-core VM with the passive
// wait policy the engine runs under; converting 65536 floats to bf16 takes about 15 µs.
constexpr int64_t kParallelMinElements = 65536;

}  // namespace h2oflex::cpu
