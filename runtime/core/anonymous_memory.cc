#include "runtime/core/anonymous_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older C library headers lack the name
#endif

namespace h2oflex {
namespace {

size_t page_rounded(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* map_anonymous(size_t bytes) {
  const size_t length = page_rounded(bytes == 0 ? 1 : bytes);
  constexpr int kProt = PROT_READ | PROT_WRITE, kFlags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (length < kHugePageBytes) {
    void* p = mmap(nullptr, length, kProt, kFlags, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Map one huge page more, keep the aligned part, give back the rest.
  void* raw = mmap(nullptr, length + kHugePageBytes, kProt, kFlags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + length, end = begin + length + kHugePageBytes;
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, length, MADV_HUGEPAGE);  // advice only: refused where huge pages are off
  return p;
}

bool fault_in_parallel(void* ptr, size_t bytes) {
  if (ptr == nullptr || bytes == 0) return true;
  constexpr size_t kPiece = size_t{64} << 20;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(ptr) + bytes;
  const int64_t pieces = static_cast<int64_t>((end - begin + kPiece - 1) / kPiece);
  std::atomic<bool> supported{true};
#pragma omp parallel for schedule(dynamic, 1) if (pieces > 1)
  for (int64_t i = 0; i < pieces; ++i) {
    if (!supported.load(std::memory_order_relaxed)) continue;
    const uintptr_t at = begin + static_cast<uintptr_t>(i) * kPiece;
    const size_t length = static_cast<size_t>(std::min<uintptr_t>(kPiece, end - at));
    if (madvise(reinterpret_cast<void*>(at), length, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
      supported.store(false, std::memory_order_relaxed);
    }
  }
  return supported.load();
}

void unmap_anonymous(void* ptr, size_t bytes) {
  if (ptr != nullptr) munmap(ptr, page_rounded(bytes == 0 ? 1 : bytes));
}

}  // namespace h2oflex
