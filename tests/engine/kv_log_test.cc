// The KV log's bookkeeping against a direct model of the cache: a simulated home (base + log) and
// workspace that the spans are applied to byte for byte, and a reference cache written in place.
// After every step the load must rebuild every filled slot exactly, for the compaction rule and
// for fixed compaction points, while the log stays inside the room the plan gives it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/kv_log.h"
#include "policy/memory_plan.h"
#include "runtime/core/error.h"

namespace h2oflex {
namespace {

struct Sim {
  KvLogGeometry g;
  std::vector<unsigned char> home, work, ref;  // ref: the cache as the workspace should hold it

  explicit Sim(const KvLogGeometry& geometry)
      : g(geometry),
        home(2 * g.kv_bytes + g.log_bytes, 0xEE),
        work(2 * g.kv_bytes, 0),
        ref(2 * g.kv_bytes, 0) {}
  static void apply(const ByteSpans& spans, const std::vector<unsigned char>& from,
                    std::vector<unsigned char>& to) {
    for (const ByteSpan& s : spans) {
      ASSERT_LE(s.src + s.length, from.size());
      ASSERT_LE(s.dst + s.length, to.size());
      std::memcpy(to.data() + s.dst, from.data() + s.src, s.length);
    }
  }
  uint64_t at(int which, uint64_t record, uint64_t slot) const {
    return static_cast<uint64_t>(which) * g.kv_bytes + (record * g.slots + slot) * g.record_bytes;
  }
  // A compute step: new records in the workspace and in the reference.
  void write(uint64_t record, uint64_t slot, std::mt19937& rng) {
    for (int which = 0; which < 2; ++which) {
      for (uint64_t i = 0; i < g.record_bytes; ++i) {
        const auto b = static_cast<unsigned char>(rng());
        work[at(which, record, slot) + i] = ref[at(which, record, slot) + i] = b;
      }
    }
  }
  // Garbage in the workspace (another layer used it), then a load.
  void load(KvLog& log, std::mt19937& rng) {
    for (auto& b : work) b = static_cast<unsigned char>(rng());
    apply(log.load(), home, work);
  }
  void expect_filled_equal(uint64_t filled, int step) const {
    for (int which = 0; which < 2; ++which) {
      for (uint64_t r = 0; r < g.records; ++r) {
        ASSERT_EQ(0, std::memcmp(work.data() + at(which, r, 0), ref.data() + at(which, r, 0),
                                 filled * g.record_bytes))
            << "step " << step << " record " << r << (which ? " V" : " K");
      }
    }
  }
};

KvLogGeometry geometry(uint64_t records, uint64_t slots, uint64_t record_bytes, int steps,
                       uint64_t block) {
  KvLogGeometry g;
  g.records = records;
  g.slots = slots;
  g.record_bytes = record_bytes;
  g.block = block;
  g.kv_bytes = (records * slots * record_bytes + 4095) / 4096 * 4096;
  g.log_bytes = policy::kv_log_bytes(records, slots, record_bytes, steps) / block * block;
  return g;
}

// A full cache (slots filled one per step) or an evicting one (random victims among the filled
// slots, some records unchanged in a step); returns the compactions.
int run(const KvLogGeometry& g, uint64_t prompt, int steps, bool evicting, int compact_every,
        uint32_t seed) {
  std::mt19937 rng(seed);
  Sim sim(g);
  KvLog log(g, compact_every);
  for (uint64_t r = 0; r < g.records; ++r) {
    for (uint64_t s = 0; s < prompt; ++s) sim.write(r, s, rng);
  }
  Sim::apply(log.write_base(prompt), sim.work, sim.home);
  for (int step = 0; step < steps; ++step) {
    sim.load(log, rng);
    sim.expect_filled_equal(log.filled(), step);
    if (testing::Test::HasFatalFailure()) return -1;
    ChangedSlots changed(g.records, -1);
    for (uint64_t r = 0; r < g.records; ++r) {
      if (evicting) {
        if (rng() % 5 == 0) continue;  // nothing changed for this record
        changed[r] = static_cast<int32_t>(rng() % prompt);
      } else {
        changed[r] = static_cast<int32_t>(prompt + static_cast<uint64_t>(step));
      }
      sim.write(r, static_cast<uint64_t>(changed[r]), rng);
    }
    Sim::apply(log.store(changed), sim.work, sim.home);
    EXPECT_LE(log.log_used(), g.log_bytes);
    if (compact_every > 0) {
      EXPECT_LE(log.entries(), static_cast<size_t>(compact_every));
    }
  }
  sim.load(log, rng);
  sim.expect_filled_equal(log.filled(), steps);
  return log.compactions();
}

TEST(KvLog, LoadsRebuildTheCacheAtEveryCompactionPoint) {
  for (const uint64_t block : {512u, 4096u}) {
    for (const int every : {0, 1, 2, 3, 7}) {
      // 6 x 64-byte records (unaligned to the block), 40 slots, prompt 12.
      const KvLogGeometry g = geometry(6, 40, 64, 25, block);
      run(g, 12, 25, /*evicting=*/false, every, 3);
      run(g, 12, 25, /*evicting=*/true, every, 4);
      ASSERT_FALSE(HasFatalFailure()) << "block " << block << " every " << every;
    }
  }
}

// A full cache's base is written and read as few long requests when the gaps between records'
// filled parts are short (prompt 512 of 528 slots: 4 KiB gaps), and record by record when they
// are not (512 of 1024: 128 KiB gaps, as many bytes as the records'). A load reads exactly what
// the base write wrote: a gap the write skipped would be a hole in the file, which splits reads.
void expect_same_spans(const ByteSpans& a, const ByteSpans& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].src, b[i].dst) << i;  // written from the workspace to the home, read back
    EXPECT_EQ(a[i].dst, b[i].src) << i;
    EXPECT_EQ(a[i].length, b[i].length) << i;
  }
}

TEST(KvLog, BaseWritesAndLoadsCrossShortGapsOnly) {
  const uint64_t records = 256, record = 256, prompt = 512;
  const uint64_t live = 2 * records * prompt * record;
  const KvLogGeometry near_full = geometry(records, 528, record, 16, 512);
  KvLog a(near_full);
  const ByteSpans written = a.write_base(prompt);  // the first write: every slot
  EXPECT_EQ(total_length(written), 2 * records * 528 * record);
  const ByteSpans loaded = a.load();
  EXPECT_EQ(loaded.size(), 2u);  // K and V, each read through the short gaps
  EXPECT_GE(total_length(loaded), live);
  EXPECT_LE(total_length(loaded), live + live / 16);

  // Half the slots filled: the gaps are too long to read through. The first write still covers
  // every slot (no hole for a later write to fill); loads and later base writes (compactions)
  // move the filled slots alone.
  const KvLogGeometry half_full = geometry(records, 1024, record, 16, 512);
  KvLog b(half_full, /*compact_every=*/1);
  const ByteSpans whole = b.write_base(prompt);
  EXPECT_EQ(total_length(whole), 2 * records * 1024 * record);
  const ByteSpans exact = b.load();
  EXPECT_EQ(exact.size(), 2 * records);
  EXPECT_EQ(total_length(exact), live);
  b.store(ChangedSlots(records, static_cast<int32_t>(prompt)));  // a log entry
  EXPECT_EQ(b.compactions(), 0);
  const ByteSpans compaction = b.store(ChangedSlots(records, static_cast<int32_t>(prompt + 1)));
  EXPECT_EQ(b.compactions(), 1);
  EXPECT_EQ(compaction.size(), 2 * records);
  const uint64_t filled_blocks = ((prompt + 2) * record + 511) / 512 * 512;  // 514 slots
  EXPECT_EQ(total_length(compaction), 2 * records * filled_blocks);
  expect_same_spans(compaction, b.load());
}

TEST(KvLog, FixedPointsCompactThatOften) {
  const KvLogGeometry g = geometry(4, 64, 256, 30, 512);
  EXPECT_EQ(run(g, 8, 30, false, 1, 5), 15);  // every other store compacts
  EXPECT_EQ(run(g, 8, 30, false, 2, 5), 10);
  EXPECT_EQ(run(g, 8, 30, false, 5, 6), 5);
}

// The rule compacts when the log bytes loads read reach a compaction's bytes: full entries of r
// bytes and W live bytes give a compaction after k steps, k the first with r k (k - 1) / 2 >= W.
TEST(KvLog, TheRuleCompactsWhenExtraReadsReachARewrite) {
  const uint64_t records = 8, record = 512, prompt = 50;  // entries: 8 KiB, aligned
  const KvLogGeometry g = geometry(records, 64, record, 12, 512);
  const uint64_t r = 2 * records * record;
  int compacted_at = -1;
  std::mt19937 rng(9);
  Sim sim(g);
  KvLog log(g);
  Sim::apply(log.write_base(prompt), sim.work, sim.home);
  for (int step = 0; step < 12 && compacted_at < 0; ++step) {
    sim.load(log, rng);
    ChangedSlots changed(records, static_cast<int32_t>(prompt + static_cast<uint64_t>(step)));
    Sim::apply(log.store(changed), sim.work, sim.home);
    if (log.compactions() > 0) compacted_at = step;
  }
  // Live bytes at that store: K and V of (prompt + k) slots per record.
  int k = 1;
  while (r * static_cast<uint64_t>(k * (k - 1)) / 2 < 2 * records * (prompt + k) * record) ++k;
  EXPECT_EQ(compacted_at, k - 1) << "k = " << k;
  EXPECT_EQ(log.entries(), 0u);
  EXPECT_EQ(log.log_used(), 0u);
}

// The plan's room holds every entry the rule lets the log keep: with it, the log never has to
// compact early, so the compactions are the same as with unbounded room.
TEST(KvLog, ThePlansRoomNeverForcesACompaction) {
  for (const uint64_t slots : {20u, 100u, 300u}) {
    const int steps = static_cast<int>(slots) - 10;
    KvLogGeometry planned = geometry(4, slots, 128, steps, 512);
    KvLogGeometry unbounded = planned;
    unbounded.log_bytes = 64 << 20;
    EXPECT_EQ(run(planned, 10, steps, false, 0, 1), run(unbounded, 10, steps, false, 0, 1))
        << slots << " slots";
  }
  // At a real model's shapes the log is small beside the cache (OPT-1.3B, batch 8, 512 + 512).
  const KvLogGeometry opt = geometry(8 * 32, 1024, 64 * 4, 511, 512);
  EXPECT_LT(opt.log_bytes, 2 * opt.kv_bytes / 10);
}

TEST(KvLog, RejectsInconsistentInput) {
  const KvLogGeometry g = geometry(2, 8, 64, 4, 512);
  KvLog log(g);
  log.write_base(4);
  EXPECT_THROW(log.store(ChangedSlots(3, 0)), InternalError);
  EXPECT_THROW(log.store(ChangedSlots{0, 8}), InternalError);
  EXPECT_THROW(log.write_base(9), InternalError);
}

}  // namespace
}  // namespace h2oflex
