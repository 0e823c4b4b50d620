#include "runtime/core/anonymous_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

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

void unmap_anonymous(void* ptr, size_t bytes) {
  if (ptr != nullptr) munmap(ptr, page_rounded(bytes == 0 ? 1 : bytes));
}

}  // namespace h2oflex
