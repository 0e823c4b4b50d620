// Asynchronous copies between tiers on independent, named queues.
//
// Each queue has its own worker thread (blocking, never spinning), io_uring engine and bounce
// buffer, so a cache store never waits behind a weight load. The cache load queue has two: a
// load starts as soon as the one before it has handed its last request to the kernel, so the
// device is not left to drain between two loads (kCacheLoadWorkers). copy() returns a handle;
// wait() blocks until that copy is done and rethrows its error. Bytes moved are counted per
// (phase, kind, source tier, destination tier), and each queue's busy time is recorded so that a
// run can tell whether it was I/O-bound.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "offload/io/aligned_buffer.h"
#include "offload/io/io_engine.h"
#include "offload/transfer/location.h"
#include "offload/transfer/range_io.h"

namespace h2oflex {

enum class QueueId : uint8_t { WeightLoad, CacheLoad, CacheStore, Activation };
inline constexpr size_t kQueueCount = 4;
// "weight_load", "cache_load", "cache_store", "activation".
std::string_view queue_name(QueueId q);
// The queue whose worker is the calling thread, if any: lets a device tier run a queue's copies
// on that queue's own GPU stream.
std::optional<QueueId> current_transfer_queue();

enum class DataKind : uint8_t { Weight, Kv, Activation };
// "weight", "kv", "activation".
std::string_view data_kind_name(DataKind k);

// What a copy is, for the byte counters.
struct TransferTag {
  std::string phase;  // "prefill", "decode", "load", ...
  DataKind kind = DataKind::Weight;
};

struct TransferRecord {
  std::string phase;
  DataKind kind;
  TierKind src;
  TierKind dst;
  uint64_t bytes;
  uint64_t copies;
};

// Completion handle of one copy. Copyable; an empty handle counts as done.
class TransferHandle {
 public:
  TransferHandle() = default;
  bool done() const;
  // Blocks until the copy finished; rethrows its error (every waiter sees it).
  void wait() const;

 private:
  friend class TransferEngine;
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr error;
  };
  std::shared_ptr<State> state_;
};

// The most bytes of cache loads the device holds at once (the cache load queue's
// IoEngineOptions::max_in_flight_bytes). A cache store queued behind them waits until they are
// read: 16 MiB is about 7 ms at 2.3 GB/s, hidden behind the next visit's load. Fewer starve the
// device: the block layer merges the 1 MiB chunks of a sequential read into requests of up to
// max_sectors_kb (4 MiB on a virtio disk), so 4 MiB in flight was one request at a time, and a
// full cache's loads beside compute read 10% slower than with 16 (README, "The KV cache and
// H2O"). Counted in bytes, not requests: the filled parts of a long generation's full cache are
// 128-256 KiB requests.
inline constexpr uint64_t kCacheLoadInFlightBytes = uint64_t{16} << 20;

// Workers of the cache load queue. Tasks start in queue order, each once the one before has
// submitted all its requests (or finished), so a load's first requests go to the device while the
// last ones of the load before are still read: with one worker, the device held fewer and fewer
// requests at the end of each load and none while the next started (a full cache's decode loads
// one visit's 70 MB every 26 ms; README, "The KV cache and H2O"). The bytes in flight may reach
// twice kCacheLoadInFlightBytes while one load drains and the next starts.
inline constexpr size_t kCacheLoadWorkers = 2;

struct TransferEngineOptions {
  IoEngineOptions io;                     // per worker
  size_t bounce_bytes = size_t{8} << 20;  // per worker, for unaligned and staged copies
};

class TransferEngine : private PinListener {
 public:
  explicit TransferEngine(TransferEngineOptions options = {});
  // Finishes queued work, then stops the workers. Detaches from pinned host tiers.
  ~TransferEngine() override;
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  // Queues a copy of `bytes` from `src` to `dst`. `then` (optional) runs on the queue's worker
  // after the copy succeeded; an exception from it becomes the copy's error. The copy starts only
  // once every handle in `after` is done (copies on other queues, such as the store that must
  // leave a buffer before a load refills it), without blocking the caller; an error of one of
  // them becomes this copy's error.
  TransferHandle copy(QueueId queue, const Location& src, const Location& dst, uint64_t bytes,
                      TransferTag tag, std::function<void()> then = {},
                      std::vector<TransferHandle> after = {});
  // Copies many pieces, (offset, length) relative to src and dst, as one task: a scattered
  // write-back such as the KV slots one decode step changed. Pieces in memory only copies can
  // reach (a GPU's) are gathered there into one packed buffer per copy out
  // (MemoryTier::gather_to_host); aligned direct disk writes are submitted together (up to the
  // queue depth in flight); anything else runs piece by piece.
  using Ranges = ByteRanges;
  TransferHandle copy_ranges(QueueId queue, const Location& src, const Location& dst, Ranges ranges,
                             TransferTag tag);
  // Copies spans whose source and destination offsets differ, in order, as one task (where two
  // spans overlap in the destination the later one wins): a log-structured KV cache appends a
  // step's scattered records to its log and reads the log back over its base. Between memory
  // and disk, spans direct I/O can move as they are go to io_uring together; runs of spans that
  // are contiguous on the disk side move through the bounce buffer as one request each.
  // `after` as for copy().
  TransferHandle copy_spans(QueueId queue, const Location& src, const Location& dst,
                            ByteSpans spans, TransferTag tag,
                            std::vector<TransferHandle> after = {});
  void wait(const TransferHandle& handle) const { handle.wait(); }
  // Runs a copy on the calling thread (its own io engine), counted like the others.
  void copy_sync(const Location& src, const Location& dst, uint64_t bytes, TransferTag tag);
  // Blocks until everything queued so far on `queue` (or on every queue) has run. Errors stay
  // with the handles.
  void drain(QueueId queue);
  void drain_all();

  std::vector<TransferRecord> counters() const;
  // Total bytes for one (phase, kind, src, dst); 0 if none.
  uint64_t bytes_moved(std::string_view phase, DataKind kind, TierKind src, TierKind dst) const;
  void reset_counters();
  // The I/O options the queue's engine runs with (the cache queues differ from the defaults).
  const IoEngineOptions& io_options(QueueId queue) const;
  // Submissions the queue's engine ran (IoEngine::submissions), for tests of how copies batch.
  uint64_t io_submissions(QueueId queue) const;
  // Seconds the queue's worker spent executing copies.
  double busy_seconds(QueueId queue) const;

  // Registers the tier's pinned buffers (now and later) as io_uring fixed buffers of every queue.
  void use_pinned_memory(HostTier& host);
  // Announces the engine's own bounce buffers to `listener` (a GPU build's cudaHostRegister),
  // so disk <-> device copies staged through them are DMA on both sides. Undone on destruction;
  // the listener must outlive the engine.
  void pin_bounce_buffers(PinListener& listener);
  // The injectable I/O layer for fault tests, installed on every queue's engine.
  void set_fault_hook(std::shared_ptr<IoFaultHook> hook);

 private:
  struct Task {
    Location src, dst;
    uint64_t bytes;
    TransferTag tag;
    std::function<void()> then;
    std::shared_ptr<TransferHandle::State> state;
    Ranges ranges;  // non-empty: a scattered copy; `bytes` is their sum
    std::vector<TransferHandle> after;
    ByteSpans spans;  // non-empty: a span copy; `bytes` is their sum
  };
  // One piece of a scattered store: `length` bytes from `from` to offset `at` of the destination.
  struct Piece {
    const char* from;
    uint64_t at, length;
  };
  struct Worker {
    std::unique_ptr<IoEngine> io;
    AlignedBuffer bounce;
    std::thread thread;
  };
  struct Queue {
    std::vector<std::unique_ptr<Worker>> workers;
    std::mutex mutex;
    std::condition_variable cv;       // work arrived / the next task may start / stop
    std::condition_variable idle_cv;  // a task finished
    std::deque<Task> tasks;
    uint64_t submitted = 0, finished = 0;
    // A worker has taken a task and not yet submitted all its requests: the next task waits.
    bool starting = false;
    // Busy time counts while any worker executes (overlapping tasks are not counted twice).
    int executing = 0;
    double busy_since = 0;
    double busy_s = 0;
    bool stop = false;
  };
  struct Lane {  // what one executing thread needs
    IoEngine* io;
    AlignedBuffer* bounce;
    // Optional: called once the task has submitted its last request, so the next may start.
    const std::function<void()>* all_submitted = nullptr;
  };

  template <typename F>
  void for_each_worker(F&& f) {
    for (auto& q : queues_) {
      for (auto& w : q->workers) f(*w);
    }
  }
  void worker_loop(Queue& q, Worker& w);
  void execute(Lane lane, const Location& src, const Location& dst, uint64_t bytes);
  void execute_ranges(Lane lane, const Location& src, const Location& dst, const Ranges& ranges);
  void execute_spans(Lane lane, const Location& src, const Location& dst, const ByteSpans& spans);
  // Stores ranges (offsets relative to both `src` and `dst`) of host bytes into `dst`; `edges`
  // serves unaligned disk edges.
  void store_ranges(Lane lane, const char* src, const Location& dst, const Ranges& ranges,
                    Bounce edges);
  void store_pieces(Lane lane, const std::vector<Piece>& pieces, const Location& dst, Bounce edges);
  void count(const TransferTag& tag, TierKind src, TierKind dst, uint64_t bytes);
  void register_pinned(void* ptr, size_t bytes) override;
  void unregister_pinned(void* ptr, size_t bytes) noexcept override;

  TransferEngineOptions options_;
  std::array<std::unique_ptr<Queue>, kQueueCount> queues_;
  std::mutex sync_mutex_;
  std::unique_ptr<IoEngine> sync_io_;
  AlignedBuffer sync_bounce_;
  mutable std::mutex counters_mutex_;
  std::map<std::tuple<std::string, DataKind, TierKind, TierKind>, std::pair<uint64_t, uint64_t>>
      counters_;
  std::mutex hosts_mutex_;
  std::vector<HostTier*> pinned_hosts_;
  PinListener* bounce_listener_ = nullptr;
};

}  // namespace h2oflex
