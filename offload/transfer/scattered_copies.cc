// How one task's scattered pieces move (TransferEngine::copy_ranges and copy_spans): many small
// ranges or spans batched into as few io_uring submissions and device copies as their placement
// allows. The queues, workers and counters are in transfer_engine.cc.
#include <cstring>

#include "offload/transfer/range_io.h"
#include "offload/transfer/transfer_engine.h"
#include "runtime/core/gpu_memory_reserve.h"

namespace h2oflex {

void TransferEngine::execute_spans(Lane lane, const Location& src, const Location& dst,
                                   const ByteSpans& spans) {
  H2OFLEX_CHECK(!(src.is_disk() && dst.is_disk()), "span copy from disk to disk");
  if (!src.is_disk() && !dst.is_disk()) {
    for (const ByteSpan& s : spans)
      execute(lane, src.advanced(s.src), dst.advanced(s.dst), s.length);
    return;
  }
  const bool read = src.is_disk();
  const Location& disk = read ? src : dst;
  const Location& mem = read ? dst : src;
  DiskFile& file = *disk.file;
  AlignedBuffer& bounce = *lane.bounce;
  const size_t half = bounce.size() / 2;
  char* staging = bounce.data();
  const Bounce edges{bounce.data() + half, half};
  const auto disk_at = [&](const ByteSpan& s) { return disk.offset + (read ? s.src : s.dst); };
  const auto mem_at = [&](const ByteSpan& s) { return read ? s.dst : s.src; };

  // Spans direct I/O moves as they are, gathered into one submission. A read run that must be
  // staged (a KV log's records) joins it too, as the aligned window of the disk around it read
  // into the staging area, and its spans are copied out once the submission is in: a load reads
  // a cache's base and its log without the device running dry between them (each separate
  // submission drains the requests in flight before the next starts). Spans apply in order: a
  // direct span after a staged run waits for that run to be copied out.
  struct StagedRun {
    size_t first, last;  // spans [first, last)
    size_t at;           // where the first span's bytes are in the staging area
  };
  std::vector<IoSegment> direct;
  std::vector<StagedRun> staged;
  size_t staging_used = 0;
  const auto copy_out = [&](const StagedRun& r) {
    size_t at = r.at;
    for (size_t k = r.first; k < r.last; ++k) {
      char* to = static_cast<char*>(mem.ptr) + mem_at(spans[k]);
      if (mem.host_addressable()) {
        std::memcpy(to, staging + at, spans[k].length);
      } else {
        mem.memory->copy_from_host(to, staging + at, spans[k].length);
      }
      at += spans[k].length;
    }
  };
  // The last flush lets the queue's next task start once its requests are all submitted.
  const auto flush = [&](bool last = false) {
    if (!direct.empty()) {
      if (read) {
        static const std::function<void()> none;
        lane.io->read_scattered(file, direct,
                                last && lane.all_submitted ? *lane.all_submitted : none);
      } else {
        lane.io->write_scattered(file, direct);
      }
      direct.clear();
    }
    for (const StagedRun& r : staged) copy_out(r);
    staged.clear();
    staging_used = 0;
  };
  const size_t oa = file.offset_align(), ma = file.mem_align();
  // Windows are whole blocks at both ends: a run leaves room for them in the staging area.
  const size_t run_limit = half - 2 * oa;
  const uint64_t file_size = read && file.is_direct() ? file.size() : 0;
  size_t i = 0;
  while (i < spans.size()) {
    const ByteSpan& s = spans[i];
    if (s.length == 0) {
      ++i;
      continue;
    }
    char* mem_ptr = mem.host_addressable() ? static_cast<char*>(mem.ptr) + mem_at(s) : nullptr;
    if (mem_ptr != nullptr && file.is_direct() && disk_at(s) % oa == 0 && s.length % oa == 0 &&
        reinterpret_cast<uintptr_t>(mem_ptr) % ma == 0) {
      if (!staged.empty()) flush();
      direct.push_back(IoSegment{disk_at(s), mem_ptr, static_cast<size_t>(s.length)});
      ++i;
      continue;
    }
    // A run: this span and the following ones contiguous with it on the disk, as many as the
    // staging area holds, moved as one request.
    size_t j = i;
    uint64_t run = 0;
    while (j < spans.size() && run + spans[j].length <= run_limit &&
           disk_at(spans[j]) == disk_at(s) + run) {
      run += spans[j++].length;
    }
    // A read's window joins the submission where the file holds all of it (a direct read past
    // the end comes back short).
    const uint64_t window = disk_at(s) / oa * oa;
    const uint64_t window_end = (disk_at(s) + run + oa - 1) / oa * oa;
    if (j > i && read && file.is_direct() && window_end <= file_size) {
      const size_t length = static_cast<size_t>(window_end - window);
      const auto place = [&] { return (staging_used + ma - 1) / ma * ma; };
      if (place() + length > half) flush();
      const size_t at = place();
      direct.push_back(IoSegment{window, staging + at, length});
      staged.push_back(StagedRun{i, j, at + static_cast<size_t>(disk_at(s) - window)});
      staging_used = at + length;
      i = j;
      continue;
    }
    flush();
    if (j == i) {  // larger than the staging area: on its own
      execute(lane, src.advanced(s.src), dst.advanced(s.dst), s.length);
      ++i;
      continue;
    }
    if (read) {
      read_range(*lane.io, file, disk_at(s), staging, run, edges);
      copy_out(StagedRun{i, j, 0});
    } else {
      if (mem.host_addressable()) {
        uint64_t at = 0;
        for (size_t k = i; k < j; ++k) {
          std::memcpy(staging + at, static_cast<const char*>(mem.ptr) + mem_at(spans[k]),
                      spans[k].length);
          at += spans[k].length;
        }
      } else {
        ByteRanges pieces;
        for (size_t k = i; k < j; ++k) pieces.emplace_back(mem_at(spans[k]), spans[k].length);
        mem.memory->gather_to_host(staging, mem.ptr, pieces);
      }
      write_range(*lane.io, file, disk_at(s), staging, run, edges);
    }
    i = j;
  }
  flush(/*last=*/true);
}

void TransferEngine::execute_ranges(Lane lane, const Location& src, const Location& dst,
                                    const Ranges& ranges) {
  AlignedBuffer& bounce = *lane.bounce;
  if (src.host_addressable()) {
    store_ranges(lane, static_cast<const char*>(src.ptr), dst, ranges,
                 Bounce{bounce.data(), bounce.size()});
    return;
  }
  if (!src.is_disk() && ranges.size() > 1) {
    // Memory only copies can reach (a GPU's): each copy out waits for its stream, which costs
    // far more than the few hundred bytes of a KV record, and copying spans with their gaps
    // moves whole caches to store a few records. The memory gathers the pieces into one packed
    // buffer per copy (as many as fit the staging half of the bounce buffer and the device's
    // gather buffer), and they are stored from there.
    const size_t half = bounce.size() / 2;
    const size_t pack = std::min<size_t>(half, gpu_reserve::kStoreGatherBytes);
    const Bounce edges{bounce.data() + half, half};
    size_t i = 0;
    while (i < ranges.size()) {
      if (ranges[i].second > pack) {
        execute(lane, src.advanced(ranges[i].first), dst.advanced(ranges[i].first),
                ranges[i].second);
        ++i;
        continue;
      }
      size_t j = i;
      uint64_t packed = 0;
      while (j < ranges.size() && packed + ranges[j].second <= pack) packed += ranges[j++].second;
      const Ranges part(ranges.begin() + static_cast<std::ptrdiff_t>(i),
                        ranges.begin() + static_cast<std::ptrdiff_t>(j));
      src.memory->gather_to_host(bounce.data(), src.ptr, part);
      std::vector<Piece> pieces;
      uint64_t at = 0;
      for (const auto& [off, len] : part) {
        pieces.push_back(Piece{bounce.data() + at, off, len});
        at += len;
      }
      store_pieces(lane, pieces, dst, edges);
      i = j;
    }
    return;
  }
  for (const auto& [off, len] : ranges) execute(lane, src.advanced(off), dst.advanced(off), len);
}

void TransferEngine::store_ranges(Lane lane, const char* src, const Location& dst,
                                  const Ranges& ranges, Bounce edges) {
  std::vector<Piece> pieces;
  pieces.reserve(ranges.size());
  for (const auto& [off, len] : ranges) pieces.push_back(Piece{src + off, off, len});
  store_pieces(lane, pieces, dst, edges);
}

void TransferEngine::store_pieces(Lane lane, const std::vector<Piece>& pieces, const Location& dst,
                                  Bounce edges) {
  if (dst.is_disk() && dst.file->is_direct()) {
    // Aligned direct writes go to io_uring together (up to the queue depth in flight).
    const size_t oa = dst.file->offset_align(), ma = dst.file->mem_align();
    std::vector<IoSegment> segments;
    bool aligned = true;
    for (const Piece& p : pieces) {
      const uint64_t at = dst.offset + p.at;
      aligned = aligned && at % oa == 0 && p.length % oa == 0 &&
                reinterpret_cast<uintptr_t>(p.from) % ma == 0;
      segments.push_back(IoSegment{at, const_cast<char*>(p.from), static_cast<size_t>(p.length)});
    }
    if (aligned) {
      lane.io->write_scattered(*dst.file, segments);
      return;
    }
  }
  for (const Piece& p : pieces) {
    if (dst.is_disk()) {
      write_range(*lane.io, *dst.file, dst.offset + p.at, p.from, p.length, edges);
    } else if (dst.host_addressable()) {
      std::memcpy(static_cast<char*>(dst.ptr) + p.at, p.from, p.length);
    } else {
      dst.memory->copy_from_host(static_cast<char*>(dst.ptr) + p.at, p.from, p.length);
    }
  }
}

}  // namespace h2oflex
