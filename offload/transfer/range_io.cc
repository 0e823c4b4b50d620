#include "offload/transfer/range_io.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/error.h"

namespace h2oflex {
namespace {

uint64_t down(uint64_t v, uint64_t a) {
  return v / a * a;
}
uint64_t up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}
bool ptr_aligned(const void* p, size_t a) {
  return reinterpret_cast<uintptr_t>(p) % a == 0;
}

// Reads the aligned span [begin, begin + len) into `buf`, zero-filling past end of file, and
// checks that at least up to `needed_end` existed.
void read_span_for_patch(IoEngine& io, const DiskFile& file, uint64_t begin, char* buf, size_t len,
                         uint64_t needed_end, bool need_data) {
  const size_t got = io.read_upto(file, begin, buf, len);
  if (got < len) std::memset(buf + got, 0, len - got);
  if (need_data && begin + got < needed_end) {
    throw IoError(detail::concat("read of ", len, " bytes at offset ", begin, " in '", file.path(),
                                 "' failed: unexpected end of file at offset ", begin + got,
                                 " (needed data up to offset ", needed_end,
                                 "; the file is shorter than expected)"));
  }
}

size_t bounce_span(const Bounce& bounce, size_t block) {
  const size_t span = down(bounce.size, block);
  H2OFLEX_CHECK(span >= block, "bounce buffer of ", bounce.size, " bytes is smaller than one ",
                block, "-byte block");
  return span;
}

// When the aligned middle of [offset, offset + length) can move straight between the file and
// `buf` (its address in `buf` is aligned too): moves it with middle(file offset, pointer, bytes),
// the unaligned edges with edge(...) (through the bounce buffer), and returns true.
template <typename Byte, typename Middle, typename Edge>
bool split_aligned_middle(const DiskFile& file, uint64_t offset, Byte* buf, size_t length,
                          Middle&& middle, Edge&& edge) {
  const size_t a = file.offset_align();
  const uint64_t end = offset + length;
  const uint64_t mid_begin = up(offset, a), mid_end = down(end, a);
  if (mid_end <= mid_begin || !ptr_aligned(buf + (mid_begin - offset), file.mem_align())) {
    return false;
  }
  middle(mid_begin, buf + (mid_begin - offset), mid_end - mid_begin);
  if (offset < mid_begin) edge(offset, buf, mid_begin - offset);
  if (end > mid_end) edge(mid_end, buf + (mid_end - offset), end - mid_end);
  return true;
}

}  // namespace

void read_range(IoEngine& io, const DiskFile& file, uint64_t offset, void* dst, size_t length,
                Bounce bounce) {
  if (length == 0) return;
  char* out = static_cast<char*>(dst);
  if (!file.is_direct()) {
    io.read(file, offset, out, length);
    return;
  }
  // Straight into the caller's memory for the aligned middle, when its address allows it.
  if (split_aligned_middle(
          file, offset, out, length,
          [&](uint64_t at, char* p, size_t n) { io.read(file, at, p, n); },
          [&](uint64_t at, char* p, size_t n) { read_range(io, file, at, p, n, bounce); })) {
    return;
  }
  const size_t a = file.offset_align();
  const uint64_t end = offset + length;
  const size_t span = bounce_span(bounce, file.block());
  for (uint64_t pos = down(offset, a); pos < end; pos += span) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(span, up(end, a) - pos));
    const uint64_t want_begin = std::max<uint64_t>(pos, offset);
    const uint64_t want_end = std::min<uint64_t>(pos + len, end);
    read_span_for_patch(io, file, pos, bounce.data, len, want_end, true);
    std::memcpy(out + (want_begin - offset), bounce.data + (want_begin - pos),
                want_end - want_begin);
  }
}

void write_range(IoEngine& io, DiskFile& file, uint64_t offset, const void* src, size_t length,
                 Bounce bounce) {
  if (length == 0) return;
  const char* in = static_cast<const char*>(src);
  if (!file.is_direct()) {
    io.write(file, offset, in, length);
    return;
  }
  if (split_aligned_middle(
          file, offset, in, length,
          [&](uint64_t at, const char* p, size_t n) { io.write(file, at, p, n); },
          [&](uint64_t at, const char* p, size_t n) { write_range(io, file, at, p, n, bounce); })) {
    return;
  }
  const size_t a = file.offset_align();
  const uint64_t end = offset + length;
  const size_t span = bounce_span(bounce, file.block());
  for (uint64_t pos = down(offset, a); pos < end; pos += span) {
    const size_t len = static_cast<size_t>(std::min<uint64_t>(span, up(end, a) - pos));
    const uint64_t want_begin = std::max<uint64_t>(pos, offset);
    const uint64_t want_end = std::min<uint64_t>(pos + len, end);
    const bool partial_head = want_begin > pos;
    const bool partial_tail = want_end < pos + len;
    if (!partial_head && !partial_tail) {
      std::memcpy(bounce.data, in + (want_begin - offset), len);
      io.write(file, pos, bounce.data, len);
      continue;
    }
    // Read-modify-write of the edge blocks; the lock keeps two queues patching the same block
    // from losing each other's bytes.
    std::lock_guard lock(file.rmw_mutex());
    if (len == a || (partial_head && partial_tail && len <= 2 * a)) {
      read_span_for_patch(io, file, pos, bounce.data, len, 0, false);
    } else {
      if (partial_head) read_span_for_patch(io, file, pos, bounce.data, a, 0, false);
      if (partial_tail) {
        read_span_for_patch(io, file, pos + len - a, bounce.data + len - a, a, 0, false);
      }
    }
    std::memcpy(bounce.data + (want_begin - pos), in + (want_begin - offset),
                want_end - want_begin);
    io.write(file, pos, bounce.data, len);
  }
}

}  // namespace h2oflex
