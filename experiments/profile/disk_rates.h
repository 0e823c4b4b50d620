// `profile`'s disk measurement: sequential writes and reads of a fresh file through the offload
// io engine, and scattered block-sized writes.
#pragma once

#include <cstdint>
#include <string>

namespace h2oflex {

// The file the disk measurement writes and removes in --disk-path.
std::string disk_test_file(const std::string& dir);

struct DiskRates {
  double read_bps = 0, write_bps = 0;
  double write_op_s = 0;  // seconds per small scattered write beyond its bytes
  bool direct = true;
};

// A fresh file written then read sequentially by one io engine with the defaults the transfer
// queues use; calls of up to 64 MiB so the ring drains once per call, as a layer's weights do.
// The read rate is the median of `read_passes` passes over the whole file: a run re-reads its
// weight layout every step, and a shared virtual disk's rate drifts by 2x within a minute, so
// one pass (~1 s) is a snapshot that a suite run minutes later does not see.
DiskRates measure_disk(const std::string& dir, uint64_t size, int read_passes);

}  // namespace h2oflex
