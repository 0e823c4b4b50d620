// Log-structured write-back of one (layer, GPU batch) KV cache on disk: what to read and write,
// and when to compact. Pure bookkeeping (the slot table), so it can be tested on its own; KvHome
// hands the spans to the transfer engine.
//
// The home holds a base — K, then V at kv_bytes, in slot layout [records, slots, head_dim] — whose
// first `base_filled` slots were current at the last compaction, and a log after it (at
// 2 x kv_bytes). A decode step appends its changed records (K of every changed (sequence, head),
// then their V) to the log as one write; the table here remembers which slot each went to. A load
// reads the base's filled part, then the whole log, each sequentially, and lays the log's records
// over the base in the order they were written. A compaction rewrites the base's filled part from
// the workspace (which holds the whole current cache after a step) and empties the log.
//
// When to compact. Each load pays for the log with the log's bytes read on top of the base; a
// compaction costs the live set's bytes written once (read and write bytes weigh the same: this
// disk's rates are alike, and the choice is not sensitive to their ratio, see below). The log is
// compacted at the first store at which the extra bytes read since the last compaction have
// reached what a compaction writes: the ski-rental rule. With r bytes appended per step and W
// live bytes, the loads after k steps have read r k (k - 1) / 2 extra, so a compaction comes every
// k ≈ sqrt(2 W / r) steps and costs, with the extra reads, ≈ sqrt(2 W r) per step on average —
// the least any fixed period achieves (the cost is flat near that k: a rate ratio of 2 moves k by
// 1.4x and the cost by 6%). For a full entry W / r is the number of filled slots, so the full
// cache of a 512-token prompt compacts every ≈ 32 steps, H2O-20% every ≈ 15; a 15-step run never
// compacts a full cache.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv_slots.h"
#include "runtime/core/byte_ranges.h"

namespace h2oflex {

struct KvLogGeometry {
  uint64_t records = 0;       // (sequence, head) pairs
  uint64_t slots = 0;         // per record
  uint64_t record_bytes = 0;  // one slot of K (or V) of one record
  uint64_t kv_bytes = 0;      // the K (or V) region, a multiple of `block`
  uint64_t block = 512;       // the disk's direct-I/O block
  uint64_t log_bytes = 0;     // room of the log (policy::kv_log_bytes), a multiple of `block`
};

class KvLog {
 public:
  // compact_every > 0 compacts after that many entries instead of by the rule (tests).
  explicit KvLog(const KvLogGeometry& g, int compact_every = 0);

  // After prefill the workspace holds `filled` slots per record: spans (workspace -> home) that
  // write the base (the log is empty). The first write covers all slots, so that no later write
  // fills a hole in the file (kv_log.cc); a compaction's, the filled ones across the same short
  // gaps between records as a load reads.
  ByteSpans write_base(uint64_t filled);
  // Spans (home -> workspace) that load the current cache: the base's filled part (read through
  // short gaps between records: slots beyond the filled ones may receive stale bytes), then the
  // log's records in the order they were written. Counts the log's bytes as read.
  ByteSpans load();
  // A decode step wrote `changed` (slot per record, -1 for none): spans (workspace -> home) of
  // its write-back — one log entry, or a compaction of the whole base.
  ByteSpans store(const ChangedSlots& changed);

  uint64_t filled() const { return filled_; }
  uint64_t log_used() const { return log_used_; }
  int compactions() const { return compactions_; }
  size_t entries() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t at = 0;                                    // offset in the log
    std::vector<std::pair<uint32_t, int32_t>> records;  // (record, slot) in write order
  };
  // The base's first `slots` slots of every record, K and V, rounded out to the block and
  // merged: the same offsets in the home and the workspace.
  ByteSpans base_spans(uint64_t slots) const;
  // base_spans across short gaps (kv_log.cc): what a base write and a load move.
  ByteSpans base_io(uint64_t slots) const;
  uint64_t log_offset() const { return 2 * g_.kv_bytes; }

  KvLogGeometry g_;
  int compact_every_;
  uint64_t filled_ = 0;       // slots in use per record (the most any record uses)
  uint64_t base_filled_ = 0;  // of which the base holds the state at the last compaction
  uint64_t log_used_ = 0;
  uint64_t read_since_compaction_ = 0;  // log bytes loads read since the last compaction
  std::vector<Entry> entries_;
  int compactions_ = 0;
  bool base_written_ = false;  // the base's first write (all slots) is done
};

}  // namespace h2oflex
