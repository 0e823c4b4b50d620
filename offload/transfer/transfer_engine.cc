#include "offload/transfer/transfer_engine.h"

#include <algorithm>
#include <cstdio>

#include "offload/transfer/range_io.h"
#include "runtime/core/timer.h"

namespace h2oflex {

namespace {
thread_local std::optional<QueueId> this_thread_queue;
}  // namespace

std::optional<QueueId> current_transfer_queue() {
  return this_thread_queue;
}

std::string_view queue_name(QueueId q) {
  switch (q) {
    case QueueId::WeightLoad:
      return "weight_load";
    case QueueId::CacheLoad:
      return "cache_load";
    case QueueId::CacheStore:
      return "cache_store";
    case QueueId::Activation:
      return "activation";
  }
  return "unknown";
}

std::string_view data_kind_name(DataKind k) {
  switch (k) {
    case DataKind::Weight:
      return "weight";
    case DataKind::Kv:
      return "kv";
    case DataKind::Activation:
      return "activation";
  }
  return "unknown";
}

bool TransferHandle::done() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

void TransferHandle::wait() const {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

TransferEngine::TransferEngine(TransferEngineOptions options) : options_(options) {
  H2OFLEX_INPUT_CHECK(options_.bounce_bytes >= (64u << 10),
                      "transfer bounce buffer must be at least 64 KiB");
  sync_io_ = std::make_unique<IoEngine>(options_.io);
  sync_bounce_ = AlignedBuffer(options_.bounce_bytes);
  sync_io_->register_buffer(sync_bounce_.data(), sync_bounce_.size());
  for (size_t i = 0; i < kQueueCount; ++i) {
    auto q = std::make_unique<Queue>();
    IoEngineOptions io = options_.io;
    // A cache store is a few hundred KB (a step's log entry) that would otherwise wait behind
    // the tens of MB of loads the disk's scheduler holds (it serves reads before writes): real
    // time class where the process may use it, so stores do not occupy their queue for a load's
    // time. Loads are not slowed: the stores' bytes are a few per cent of theirs.
    if (static_cast<QueueId>(i) == QueueId::CacheStore) io.ioprio_class = kIoprioClassRealTime;
    // The class only orders requests still in the kernel's scheduler; a store still waits for
    // the loads the device already holds. Capping those bytes keeps that wait to a few
    // milliseconds (kCacheLoadInFlightBytes).
    if (static_cast<QueueId>(i) == QueueId::CacheLoad) {
      io.max_in_flight_bytes = kCacheLoadInFlightBytes;
    }
    const size_t workers = static_cast<QueueId>(i) == QueueId::CacheLoad ? kCacheLoadWorkers : 1;
    for (size_t k = 0; k < workers; ++k) {
      auto w = std::make_unique<Worker>();
      w->io = std::make_unique<IoEngine>(io);
      w->bounce = AlignedBuffer(options_.bounce_bytes);
      w->io->register_buffer(w->bounce.data(), w->bounce.size());
      q->workers.push_back(std::move(w));
    }
    queues_[i] = std::move(q);
  }
  for (size_t i = 0; i < kQueueCount; ++i) {
    Queue* raw = queues_[i].get();
    const QueueId id = static_cast<QueueId>(i);
    for (auto& w : raw->workers) {
      Worker* wr = w.get();
      wr->thread = std::thread([this, raw, wr, id] {
        this_thread_queue = id;
        worker_loop(*raw, *wr);
      });
    }
  }
}

TransferEngine::~TransferEngine() {
  for (auto& q : queues_) {
    {
      std::lock_guard lock(q->mutex);
      q->stop = true;
    }
    q->cv.notify_all();
  }
  for_each_worker([](Worker& w) { w.thread.join(); });
  std::vector<HostTier*> hosts;
  {
    std::lock_guard lock(hosts_mutex_);
    hosts.swap(pinned_hosts_);
  }
  for (HostTier* h : hosts) h->remove_pin_listener(this);
  if (bounce_listener_ != nullptr) {
    try {  // a destructor must not throw; the memory is freed right after anyway
      bounce_listener_->unregister_pinned(sync_bounce_.data(), sync_bounce_.size());
      for_each_worker([&](Worker& w) {
        bounce_listener_->unregister_pinned(w.bounce.data(), w.bounce.size());
      });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: unpinning transfer buffers: %s\n", e.what());
    }
  }
}

void TransferEngine::pin_bounce_buffers(PinListener& listener) {
  H2OFLEX_CHECK(bounce_listener_ == nullptr, "pin_bounce_buffers: already pinned");
  std::vector<AlignedBuffer*> buffers{&sync_bounce_};
  for_each_worker([&](Worker& w) { buffers.push_back(&w.bounce); });
  size_t done = 0;
  try {
    for (; done < buffers.size(); ++done) {
      listener.register_pinned(buffers[done]->data(), buffers[done]->size());
    }
  } catch (...) {
    // Leave nothing registered: freed memory that stays registered breaks later registrations.
    while (done > 0) {
      --done;
      try {
        listener.unregister_pinned(buffers[done]->data(), buffers[done]->size());
      } catch (...) {
      }
    }
    throw;
  }
  bounce_listener_ = &listener;
}

TransferHandle TransferEngine::copy(QueueId queue, const Location& src, const Location& dst,
                                    uint64_t bytes, TransferTag tag, std::function<void()> then,
                                    std::vector<TransferHandle> after) {
  TransferHandle handle;
  handle.state_ = std::make_shared<TransferHandle::State>();
  Queue& q = *queues_[static_cast<size_t>(queue)];
  {
    std::lock_guard lock(q.mutex);
    H2OFLEX_CHECK(!q.stop, "copy queued on a stopped transfer engine");
    q.tasks.push_back(Task{
        src, dst, bytes, std::move(tag), std::move(then), handle.state_, {}, std::move(after), {}});
    ++q.submitted;
  }
  q.cv.notify_one();
  return handle;
}

TransferHandle TransferEngine::copy_ranges(QueueId queue, const Location& src, const Location& dst,
                                           Ranges ranges, TransferTag tag) {
  TransferHandle handle;
  handle.state_ = std::make_shared<TransferHandle::State>();
  uint64_t bytes = 0;
  for (const auto& r : ranges) bytes += r.second;
  Queue& q = *queues_[static_cast<size_t>(queue)];
  {
    std::lock_guard lock(q.mutex);
    H2OFLEX_CHECK(!q.stop, "copy queued on a stopped transfer engine");
    q.tasks.push_back(
        Task{src, dst, bytes, std::move(tag), {}, handle.state_, std::move(ranges), {}, {}});
    ++q.submitted;
  }
  q.cv.notify_one();
  return handle;
}

TransferHandle TransferEngine::copy_spans(QueueId queue, const Location& src, const Location& dst,
                                          ByteSpans spans, TransferTag tag,
                                          std::vector<TransferHandle> after) {
  TransferHandle handle;
  handle.state_ = std::make_shared<TransferHandle::State>();
  const uint64_t bytes = total_length(spans);
  Queue& q = *queues_[static_cast<size_t>(queue)];
  {
    std::lock_guard lock(q.mutex);
    H2OFLEX_CHECK(!q.stop, "copy queued on a stopped transfer engine");
    q.tasks.push_back(Task{src,
                           dst,
                           bytes,
                           std::move(tag),
                           {},
                           handle.state_,
                           {},
                           std::move(after),
                           std::move(spans)});
    ++q.submitted;
  }
  q.cv.notify_one();
  return handle;
}

void TransferEngine::copy_sync(const Location& src, const Location& dst, uint64_t bytes,
                               TransferTag tag) {
  std::lock_guard lock(sync_mutex_);
  execute(Lane{sync_io_.get(), &sync_bounce_}, src, dst, bytes);
  count(tag, src.kind, dst.kind, bytes);
}

void TransferEngine::worker_loop(Queue& q, Worker& w) {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(q.mutex);
      q.cv.wait(lock,
                [&] { return (q.stop && q.tasks.empty()) || (!q.tasks.empty() && !q.starting); });
      if (q.tasks.empty()) return;  // stop requested and nothing left
      task = std::move(q.tasks.front());
      q.tasks.pop_front();
      q.starting = true;
    }
    bool started = false;  // this task no longer holds the next one back
    const std::function<void()> let_next_start = [&] {
      if (started) return;
      started = true;
      {
        std::lock_guard lock(q.mutex);
        q.starting = false;
      }
      q.cv.notify_all();
    };
    std::exception_ptr error;
    try {  // waiting for prerequisites is not busy time
      for (const TransferHandle& h : task.after) h.wait();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(q.mutex);
      if (q.executing++ == 0) q.busy_since = now_seconds();
    }
    if (!error) {  // a failed prerequisite's error is this copy's, and the copy does not run
      try {
        const Lane lane{w.io.get(), &w.bounce, &let_next_start};
        if (!task.spans.empty()) {
          execute_spans(lane, task.src, task.dst, task.spans);
        } else if (task.ranges.empty()) {
          execute(lane, task.src, task.dst, task.bytes);
        } else {
          execute_ranges(lane, task.src, task.dst, task.ranges);
        }
        count(task.tag, task.src.kind, task.dst.kind, task.bytes);
        if (task.then) task.then();
      } catch (...) {
        error = std::current_exception();
      }
    }
    let_next_start();
    {
      std::lock_guard lock(task.state->mutex);
      task.state->done = true;
      task.state->error = error;
    }
    task.state->cv.notify_all();
    {
      std::lock_guard lock(q.mutex);
      if (--q.executing == 0) q.busy_s += now_seconds() - q.busy_since;
      ++q.finished;
    }
    q.idle_cv.notify_all();
  }
}

void TransferEngine::execute(Lane lane, const Location& src, const Location& dst, uint64_t bytes) {
  if (bytes == 0) return;
  IoEngine& io = *lane.io;
  AlignedBuffer& bounce = *lane.bounce;
  H2OFLEX_CHECK(src.is_disk() || src.memory != nullptr, "source location has no tier");
  H2OFLEX_CHECK(dst.is_disk() || dst.memory != nullptr, "destination location has no tier");

  const Bounce whole{bounce.data(), bounce.size()};
  if (src.is_disk() && dst.host_addressable()) {
    read_range(io, *src.file, src.offset, dst.ptr, bytes, whole);
  } else if (src.host_addressable() && dst.is_disk()) {
    write_range(io, *dst.file, dst.offset, src.ptr, bytes, whole);
  } else if (!src.is_disk() && !dst.is_disk() && src.host_addressable()) {
    dst.memory->copy_from_host(dst.ptr, src.ptr, bytes);
  } else if (!src.is_disk() && !dst.is_disk() && dst.host_addressable()) {
    src.memory->copy_to_host(dst.ptr, src.ptr, bytes);
  } else {
    // Neither end is host-addressable (disk <-> device memory of a GPU build, disk -> disk,
    // device -> device): stage through the first half of the bounce buffer piece by piece; the
    // second half serves the edge blocks of unaligned disk ranges.
    const size_t half = bounce.size() / 2;
    char* staging = bounce.data();
    const Bounce edges{bounce.data() + half, half};
    for (uint64_t done = 0; done < bytes; done += half) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(half, bytes - done));
      const Location s = src.advanced(done), d = dst.advanced(done);
      const char* from = staging;
      if (s.is_disk()) {
        read_range(io, *s.file, s.offset, staging, n, edges);
      } else if (s.host_addressable()) {
        from = static_cast<const char*>(s.ptr);
      } else {
        s.memory->copy_to_host(staging, s.ptr, n);
      }
      if (d.is_disk()) {
        write_range(io, *d.file, d.offset, from, n, edges);
      } else {
        d.memory->copy_from_host(d.ptr, from, n);
      }
    }
  }
}

void TransferEngine::count(const TransferTag& tag, TierKind src, TierKind dst, uint64_t bytes) {
  std::lock_guard lock(counters_mutex_);
  auto& entry = counters_[{tag.phase, tag.kind, src, dst}];
  entry.first += bytes;
  entry.second += 1;
}

std::vector<TransferRecord> TransferEngine::counters() const {
  std::lock_guard lock(counters_mutex_);
  std::vector<TransferRecord> out;
  for (const auto& [key, value] : counters_) {
    const auto& [phase, kind, src, dst] = key;
    out.push_back(TransferRecord{phase, kind, src, dst, value.first, value.second});
  }
  return out;
}

uint64_t TransferEngine::bytes_moved(std::string_view phase, DataKind kind, TierKind src,
                                     TierKind dst) const {
  std::lock_guard lock(counters_mutex_);
  auto it = counters_.find({std::string(phase), kind, src, dst});
  return it == counters_.end() ? 0 : it->second.first;
}

void TransferEngine::reset_counters() {
  std::lock_guard lock(counters_mutex_);
  counters_.clear();
}

const IoEngineOptions& TransferEngine::io_options(QueueId queue) const {
  return queues_[static_cast<size_t>(queue)]->workers.front()->io->options();
}

uint64_t TransferEngine::io_submissions(QueueId queue) const {
  uint64_t n = 0;
  for (const auto& w : queues_[static_cast<size_t>(queue)]->workers) n += w->io->submissions();
  return n;
}

double TransferEngine::busy_seconds(QueueId queue) const {
  Queue& q = *queues_[static_cast<size_t>(queue)];
  std::lock_guard lock(q.mutex);
  return q.busy_s;
}

void TransferEngine::drain(QueueId queue) {
  Queue& q = *queues_[static_cast<size_t>(queue)];
  std::unique_lock lock(q.mutex);
  const uint64_t target = q.submitted;
  q.idle_cv.wait(lock, [&] { return q.finished >= target; });
}

void TransferEngine::drain_all() {
  for (size_t i = 0; i < kQueueCount; ++i) drain(static_cast<QueueId>(i));
}

void TransferEngine::use_pinned_memory(HostTier& host) {
  {
    std::lock_guard lock(hosts_mutex_);
    if (std::find(pinned_hosts_.begin(), pinned_hosts_.end(), &host) != pinned_hosts_.end()) return;
    pinned_hosts_.push_back(&host);
  }
  host.add_pin_listener(this);
}

void TransferEngine::register_pinned(void* ptr, size_t bytes) {
  // A refusal (fixed-buffer table full, memlock limit) only costs the fixed-buffer speed-up.
  sync_io_->register_buffer(ptr, bytes);
  for_each_worker([&](Worker& w) { w.io->register_buffer(ptr, bytes); });
}

void TransferEngine::unregister_pinned(void* ptr, size_t) noexcept {
  // Dropping a fixed-buffer registration only fails with the ring already unusable; the buffer
  // is being freed either way.
  try {
    sync_io_->unregister_buffer(ptr);
    for_each_worker([&](Worker& w) { w.io->unregister_buffer(ptr); });
  } catch (...) {
  }
}

void TransferEngine::set_fault_hook(std::shared_ptr<IoFaultHook> hook) {
  sync_io_->set_fault_hook(hook);
  for_each_worker([&](Worker& w) { w.io->set_fault_hook(hook); });
}

}  // namespace h2oflex
