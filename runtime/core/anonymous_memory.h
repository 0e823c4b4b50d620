// Anonymous memory for the large buffers that the disk and the CPU stream through (host tier,
// CPU arena, bounce and staging buffers): mapped at a 2 MiB boundary and offered to the kernel
// as transparent huge pages. A direct read then lands in physically contiguous 2 MiB pieces
// instead of scattered 4 KiB pages, so the block layer builds requests of a megabyte or more
// from it: reads of 64 MiB calls into such a buffer ran at 2.6-3.1 GB/s on a virtio disk against
// 1.2-1.6 GB/s into 4 KiB pages (interleaved, same file). Where the kernel keeps huge pages off,
// the advice is ignored and the memory works as before.
#pragma once

#include <cstddef>

namespace h2oflex {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` (rounded up to whole pages) of zeroed memory; from 2 MiB on, 2 MiB-aligned and advised
// as huge pages. Returns nullptr with errno set when the kernel refuses the mapping.
void* map_anonymous(size_t bytes);
// Faults every page of [ptr, ptr + bytes) in, its contents unchanged, in 64 MiB pieces spread
// over the OpenMP threads (MADV_POPULATE_WRITE). For memory about to be pinned: pinning
// (cudaHostRegister) faults untouched pages in on one thread, which for tens of GiB takes tens of
// seconds. Returns false where the kernel has no MADV_POPULATE_WRITE (before Linux 5.14); the
// pages then fault in later, as before.
bool fault_in_parallel(void* ptr, size_t bytes);
// Releases a mapping of map_anonymous(bytes).
void unmap_anonymous(void* ptr, size_t bytes);

}  // namespace h2oflex
