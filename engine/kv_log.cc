#include "engine/kv_log.h"

#include <algorithm>

#include "runtime/core/error.h"

namespace h2oflex {

namespace {

uint64_t round_up(uint64_t n, uint64_t block) {
  return (n + block - 1) / block * block;
}

// The base is read and written across the gap between two records' filled parts rather than
// split there, when the gap costs less than a request: direct reads of 128 KiB (one record's
// filled slots of a full cache) reach ~0.7-0.85x the disk's rate of 1 MiB ones (bench-io
// --chunk), and the io engine splits a long span into its own chunks. A gap up to 1/16 of the
// span after it (6% more bytes) or 16 KiB (a few microseconds at the disk's rate) is crossed; its
// bytes land in slots beyond the filled ones, which nothing reads. Writes cross the same gaps as
// reads: the home is a sparse file, and gaps a write skipped stay holes, at which the file system
// splits every later read of the span — a full cache of a 512-token prompt, written record by
// record, was read in 131 KB device requests at half the rate of the 512 KB+ ones a written-
// through base gets. K and V are merged each on its own: a load splits once at the gap between
// them, while a small cache would write that gap at several times its own size.
ByteSpans through_short_gaps(const ByteSpans& spans, uint64_t kv_bytes) {
  ByteSpans out;
  for (const ByteSpan& s : spans) {
    if (!out.empty()) {
      ByteSpan& last = out.back();
      const uint64_t end = last.src + last.length;
      const uint64_t gap_limit = std::max<uint64_t>(16 << 10, s.length / 16);
      const bool same_region = (last.src < kv_bytes) == (s.src < kv_bytes);
      if (same_region && last.src == last.dst && s.src == s.dst && s.src >= end &&
          s.src - end <= gap_limit) {
        last.length = s.src + s.length - last.src;
        continue;
      }
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

KvLog::KvLog(const KvLogGeometry& g, int compact_every) : g_(g), compact_every_(compact_every) {
  H2OFLEX_CHECK(g.block > 0 && g.kv_bytes % g.block == 0 && g.log_bytes % g.block == 0,
                "KV log: regions not aligned to the ", g.block, "-byte block");
  H2OFLEX_CHECK(g.records * g.slots * g.record_bytes <= g.kv_bytes, "KV log: ", g.records,
                " records of ", g.slots, " slots exceed the ", g.kv_bytes, "-byte region");
}

ByteSpans KvLog::base_spans(uint64_t slots) const {
  ByteSpans out;
  if (slots == 0) return out;
  const uint64_t used = g_.records * g_.slots * g_.record_bytes;
  for (uint64_t which = 0; which < 2; ++which) {
    const uint64_t region = which * g_.kv_bytes;
    for (uint64_t r = 0; r < g_.records; ++r) {
      const uint64_t begin = r * g_.slots * g_.record_bytes;
      const uint64_t end = begin + slots * g_.record_bytes;
      // Rounded out to whole blocks: the extra bytes are empty slots (or the same bytes of the
      // neighbouring record, merged below), never beyond the region.
      const uint64_t b = region + begin / g_.block * g_.block;
      const uint64_t e = region + std::min(round_up(end, g_.block), round_up(used, g_.block));
      if (!out.empty() && out.back().src + out.back().length >= b) {
        out.back().length = std::max(out.back().length, e - out.back().src);
      } else {
        out.push_back(ByteSpan{b, b, e - b});
      }
    }
  }
  return out;
}

ByteSpans KvLog::base_io(uint64_t slots) const {
  return through_short_gaps(base_spans(slots), g_.kv_bytes);
}

ByteSpans KvLog::write_base(uint64_t filled) {
  H2OFLEX_CHECK(filled <= g_.slots, "KV log: ", filled, " filled slots of ", g_.slots);
  filled_ = base_filled_ = filled;
  entries_.clear();
  log_used_ = 0;
  read_since_compaction_ = 0;
  // The first write covers every slot, filled or not. A later direct write that reaches into a
  // part of the file never written (a hole) is one the file system must allocate, and ext4 then
  // serializes it with the loads in flight: a 512 + 512 full cache's first compaction, whose
  // 139 KB records each end 8 KB into a hole, took 31 s for 0.58 GB instead of well under one.
  // Overwrites run in parallel. The empty slots cost one extra write at prefill.
  const ByteSpans spans = base_io(base_written_ ? filled : g_.slots);
  base_written_ = true;
  return spans;
}

ByteSpans KvLog::load() {
  ByteSpans out = base_io(base_filled_);
  const uint64_t rec = g_.record_bytes;
  for (const Entry& e : entries_) {
    const uint64_t n = e.records.size();
    for (uint64_t which = 0; which < 2; ++which) {
      for (uint64_t i = 0; i < n; ++i) {
        const auto [record, slot] = e.records[i];
        const uint64_t in_log = log_offset() + e.at + (which * n + i) * rec;
        const uint64_t in_slots =
            which * g_.kv_bytes + (record * g_.slots + static_cast<uint64_t>(slot)) * rec;
        out.push_back(ByteSpan{in_log, in_slots, rec});
      }
    }
  }
  read_since_compaction_ += log_used_;
  return out;
}

ByteSpans KvLog::store(const ChangedSlots& changed) {
  H2OFLEX_CHECK(changed.size() == g_.records, "KV log: ", changed.size(), " changed slots for ",
                g_.records, " records");
  Entry entry;
  entry.at = log_used_;
  for (size_t r = 0; r < changed.size(); ++r) {
    const int32_t slot = changed[r];
    if (slot < 0) continue;
    H2OFLEX_CHECK(static_cast<uint64_t>(slot) < g_.slots, "KV log: slot ", slot, " of ", g_.slots);
    entry.records.emplace_back(static_cast<uint32_t>(r), slot);
    filled_ = std::max(filled_, static_cast<uint64_t>(slot) + 1);
  }
  if (entry.records.empty()) return {};
  const uint64_t rec = g_.record_bytes;
  const uint64_t bytes = 2 * entry.records.size() * rec;
  const uint64_t padded = round_up(bytes, g_.block);

  const bool room = log_used_ + padded <= g_.log_bytes;
  const bool due = compact_every_ > 0 ? entries_.size() >= static_cast<size_t>(compact_every_)
                                      : read_since_compaction_ >= total_length(base_io(filled_));
  if (!room || due) {
    ++compactions_;
    return write_base(filled_);
  }

  ByteSpans out;
  const uint64_t n = entry.records.size();
  for (uint64_t which = 0; which < 2; ++which) {
    for (uint64_t i = 0; i < n; ++i) {
      const auto [record, slot] = entry.records[i];
      const uint64_t in_slots =
          which * g_.kv_bytes + (record * g_.slots + static_cast<uint64_t>(slot)) * rec;
      out.push_back(ByteSpan{in_slots, log_offset() + entry.at + (which * n + i) * rec, rec});
    }
  }
  // The entry fills whole blocks, so the write is one aligned request: the padding is bytes of
  // the workspace's start, which nobody reads back.
  if (padded > bytes) out.push_back(ByteSpan{0, log_offset() + entry.at + bytes, padded - bytes});
  log_used_ += padded;
  entries_.push_back(std::move(entry));
  return out;
}

}  // namespace h2oflex
