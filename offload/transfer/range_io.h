// Disk reads and writes at arbitrary (unaligned) offsets, sizes and buffer addresses.
//
// Aligned transfers go straight to the io engine. Otherwise the aligned middle goes straight
// through when the buffer's alignment permits, and the rest moves through an aligned bounce
// buffer; partially covered blocks of a write are read, patched and written back
// (read-modify-write) under the file's rmw mutex.
#pragma once

#include <cstddef>
#include <cstdint>

#include "offload/io/disk_file.h"
#include "offload/io/io_engine.h"

namespace h2oflex {

// An aligned scratch area for edge blocks (page-aligned, at least one block long).
struct Bounce {
  char* data;
  size_t size;
};

void read_range(IoEngine& io, const DiskFile& file, uint64_t offset, void* dst, size_t length,
                Bounce bounce);
void write_range(IoEngine& io, DiskFile& file, uint64_t offset, const void* src, size_t length,
                 Bounce bounce);

}  // namespace h2oflex
