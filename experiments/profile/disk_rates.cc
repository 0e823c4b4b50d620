#include "experiments/profile/disk_rates.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "experiments/common/bench_timing.h"
#include "offload/io/aligned_buffer.h"
#include "offload/io/disk_file.h"
#include "offload/io/io_engine.h"
#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "runtime/core/temp_file_cleanup.h"
#include "runtime/core/timer.h"

namespace h2oflex {

// The file the disk measurement writes and removes in --disk-path.
std::string disk_test_file(const std::string& dir) {
  return detail::concat(dir, "/h2oflex-profile-", ::getpid(), ".bin");
}

// A fresh file written then read sequentially by one io engine with the defaults the transfer
// queues use; calls of up to 64 MiB so the ring drains once per call, as a layer's weights do.
// The read rate is the median of `read_passes` passes over the whole file: a run re-reads its
// weight layout every step, and a shared virtual disk's rate drifts by 2x within a minute, so
// one pass (~1 s) is a snapshot that a suite run minutes later does not see.
DiskRates measure_disk(const std::string& dir, uint64_t size, int read_passes) {
  constexpr uint64_t kCall = 64ull << 20;
  const std::string path = disk_test_file(dir);
  const TempFile cleanup(path);  // also on SIGINT / SIGTERM
  DiskFileOptions fo;
  fo.remove_on_close = true;
  auto file = DiskFile::open(path, FileOpen::CreateTruncate, fo);
  IoEngine io;
  const size_t call = static_cast<size_t>(std::min(kCall, size));
  AlignedBuffer buffer(call);
  std::mt19937_64 rng(1);  // incompressible contents
  auto* words = reinterpret_cast<uint64_t*>(buffer.data());
  for (size_t i = 0; i < call / 8; ++i) words[i] = rng();
  io.register_buffer(buffer.data(), buffer.size());
  // Blocks reserved untimed: a run's disk tier writes into files it has already sized.
  reserve_file_blocks(file->fd(), path, size);
  DiskRates r;
  r.direct = file->is_direct();
  Stopwatch w;
  for (uint64_t done = 0; done < size; done += call) {
    io.write(*file, done, buffer.data(),
             static_cast<size_t>(std::min<uint64_t>(call, size - done)));
  }
  r.write_bps = size / w.elapsed();
  file->sync();
  std::vector<double> passes;
  for (int pass = 0; pass < read_passes; ++pass) {
    w.reset();
    for (uint64_t done = 0; done < size; done += call) {
      io.read(*file, done, buffer.data(),
              static_cast<size_t>(std::min<uint64_t>(call, size - done)));
    }
    passes.push_back(size / w.elapsed());
  }
  std::sort(passes.begin(), passes.end());
  r.read_bps = passes[passes.size() / 2];
  // Scattered block-sized writes, `kBatch` per call, as a decode step writes back the one
  // changed slot record of every (sequence, head) of a disk-resident KV cache: their cost is
  // per request (submission, completion, the device's latency), not per byte.
  constexpr size_t kBatch = 256, kCalls = 32;
  const size_t block = file->block(), stride = 16 << 10;
  const uint64_t span = std::min<uint64_t>(size, 64ull << 20);
  std::vector<IoSegment> segs(kBatch);
  uint64_t at = 0;
  auto fill = [&] {
    for (size_t i = 0; i < kBatch; ++i) {
      segs[i] = {at, reinterpret_cast<char*>(buffer.data()) + (i * block) % call, block};
      at = (at + stride) % (span - block) / block * block;
    }
  };
  fill();
  io.write_scattered(*file, segs);  // warm-up
  w.reset();
  for (size_t c = 0; c < kCalls; ++c) {
    fill();
    io.write_scattered(*file, segs);
  }
  const double ops = static_cast<double>(kBatch * kCalls);
  r.write_op_s = std::max(0.0, w.elapsed() / ops - block / r.write_bps);
  io.unregister_buffer(buffer.data());
  return r;
}

}  // namespace h2oflex
