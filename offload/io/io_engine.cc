#include "offload/io/io_engine.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "runtime/core/error.h"

namespace h2oflex {
namespace {

constexpr size_t kMaxFixedBuffer = size_t{1} << 30;  // the kernel's limit per fixed buffer

std::string errno_text(int err) {
  return detail::concat(std::strerror(err), " (errno ", err, ")");
}

bool aligned(uint64_t v, size_t a) {
  return a <= 1 || v % a == 0;
}

}  // namespace

IoEngine::IoEngine(IoEngineOptions options)
    : options_(options), ioprio_class_(options.ioprio_class) {
  H2OFLEX_INPUT_CHECK(options_.chunk_bytes > 0, "io chunk size must be positive");
  H2OFLEX_INPUT_CHECK(options_.queue_depth > 0 && options_.queue_depth <= 4096,
                      "io queue depth must be in [1, 4096], got ", options_.queue_depth);
  io_uring_params params{};
  if (options_.sqpoll) {
    params.flags |= IORING_SETUP_SQPOLL;
    params.sq_thread_idle = 50;  // ms before the poller sleeps
  }
  const int rc = io_uring_queue_init_params(options_.queue_depth, &ring_, &params);
  if (rc < 0) throw IoError("io_uring_queue_init failed: " + errno_text(-rc));
  if (options_.registered_slots > 0 &&
      io_uring_register_buffers_sparse(&ring_, options_.registered_slots) == 0) {
    fixed_table_ = true;
    slot_used_.assign(options_.registered_slots, false);
  }
}

IoEngine::~IoEngine() {
  io_uring_queue_exit(&ring_);
}

void IoEngine::set_fault_hook(std::shared_ptr<IoFaultHook> hook) {
  std::lock_guard lock(mutex_);
  hook_ = std::move(hook);
}

bool IoEngine::register_buffer(void* ptr, size_t bytes) {
  std::lock_guard lock(regions_mutex_);
  if (!fixed_table_) return false;
  char* p = static_cast<char*>(ptr);
  std::vector<Region> added;
  for (size_t done = 0; done < bytes;) {
    const size_t piece = std::min(bytes - done, kMaxFixedBuffer);
    auto free_slot = std::find(slot_used_.begin(), slot_used_.end(), false);
    bool ok = free_slot != slot_used_.end();
    unsigned slot = 0;
    if (ok) {
      slot = static_cast<unsigned>(free_slot - slot_used_.begin());
      iovec iov{p + done, piece};
      __u64 tag = 0;
      ok = io_uring_register_buffers_update_tag(&ring_, slot, &iov, &tag, 1) == 1;
    }
    if (!ok) {  // roll back the pieces registered so far
      for (const Region& r : added) {
        iovec empty{nullptr, 0};
        __u64 tag = 0;
        io_uring_register_buffers_update_tag(&ring_, r.slot, &empty, &tag, 1);
        slot_used_[r.slot] = false;
      }
      return false;
    }
    slot_used_[slot] = true;
    added.push_back(Region{p + done, piece, slot, ptr});
    done += piece;
  }
  regions_.insert(regions_.end(), added.begin(), added.end());
  return true;
}

void IoEngine::unregister_buffer(void* ptr) {
  // Requests in flight keep their own reference to a buffer's pages, and transfers are
  // serialized with mutex_, so taking it here means none of ours uses the region any more.
  std::lock_guard io_lock(mutex_);
  std::lock_guard lock(regions_mutex_);
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->owner == ptr) {
      iovec empty{nullptr, 0};
      __u64 tag = 0;
      io_uring_register_buffers_update_tag(&ring_, it->slot, &empty, &tag, 1);
      slot_used_[it->slot] = false;
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
}

int IoEngine::fixed_slot_for(const char* ptr, size_t length) const {
  for (const Region& r : regions_) {
    if (ptr >= r.begin && ptr + length <= r.begin + r.bytes) return static_cast<int>(r.slot);
  }
  return -1;
}

void IoEngine::read(const DiskFile& file, uint64_t offset, void* buffer, size_t length) {
  const IoSegment one{offset, static_cast<char*>(buffer), length};
  run(false, file, {&one, 1}, true);
}

size_t IoEngine::read_upto(const DiskFile& file, uint64_t offset, void* buffer, size_t length) {
  const IoSegment one{offset, static_cast<char*>(buffer), length};
  return run(false, file, {&one, 1}, false);
}

void IoEngine::write(const DiskFile& file, uint64_t offset, const void* buffer, size_t length) {
  const IoSegment one{offset, const_cast<char*>(static_cast<const char*>(buffer)), length};
  run(true, file, {&one, 1}, true);
}

void IoEngine::write_scattered(const DiskFile& file, std::span<const IoSegment> segments) {
  run(true, file, segments, true);
}

void IoEngine::read_scattered(const DiskFile& file, std::span<const IoSegment> segments,
                              const std::function<void()>& on_all_submitted) {
  run(false, file, segments, true, on_all_submitted);
}

size_t IoEngine::run(bool is_write, const DiskFile& file, std::span<const IoSegment> segments,
                     bool eof_is_error, const std::function<void()>& on_all_submitted) {
  const char* op = is_write ? "write" : "read";
  size_t length = 0;  // of all segments
  for (const IoSegment& seg : segments) {
    length += seg.len;
    if (file.is_direct()) {
      H2OFLEX_CHECK(aligned(seg.offset, file.offset_align()) &&
                        aligned(seg.len, file.offset_align()) &&
                        aligned(reinterpret_cast<uintptr_t>(seg.buf), file.mem_align()),
                    "unaligned direct ", op, " of ", seg.len, " bytes at offset ", seg.offset,
                    " in '", file.path(), "' (offset alignment ", file.offset_align(),
                    ", memory alignment ", file.mem_align(), ")");
    }
  }
  if (length == 0) {
    if (on_all_submitted) on_all_submitted();
    return 0;
  }
  const uint64_t offset = segments.front().offset;  // for messages and read_upto's result
  std::lock_guard lock(mutex_);
  std::lock_guard regions_lock(regions_mutex_);
  ++submissions_;

  // One slot per request in flight; user_data is the slot index.
  struct Slot {
    uint64_t offset;  // absolute file offset of the remaining part
    char* buf;
    size_t len;  // remaining length
    uint64_t sequence;
    bool busy;
  };
  const unsigned depth = options_.queue_depth;
  std::vector<Slot> slots(depth, Slot{0, nullptr, 0, 0, false});
  const uint64_t max_bytes = options_.max_in_flight_bytes;
  uint64_t in_flight_bytes = 0;
  std::vector<unsigned> free_slots;
  for (unsigned i = depth; i > 0; --i) free_slots.push_back(i - 1);

  size_t seg_index = 0;  // the segment being handed to the ring
  size_t next = 0;       // bytes of that segment handed to the ring so far
  unsigned in_flight = 0;
  std::string error;
  uint64_t eof_at = UINT64_MAX;  // smallest file offset where end of file was seen

  auto prepare = [&](unsigned index) {
    Slot& s = slots[index];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    H2OFLEX_CHECK(sqe != nullptr, "io_uring submission queue full");
    const int slot = fixed_slot_for(s.buf, s.len);
    const unsigned len = static_cast<unsigned>(s.len);
    if (slot >= 0) {
      if (is_write) {
        io_uring_prep_write_fixed(sqe, file.fd(), s.buf, len, s.offset, slot);
      } else {
        io_uring_prep_read_fixed(sqe, file.fd(), s.buf, len, s.offset, slot);
      }
      ++fixed_requests_;
    } else if (is_write) {
      io_uring_prep_write(sqe, file.fd(), s.buf, len, s.offset);
    } else {
      io_uring_prep_read(sqe, file.fd(), s.buf, len, s.offset);
    }
    // The class in the top 3 of the 16 bits, level 0 (linux/ioprio.h's IOPRIO_PRIO_VALUE).
    if (ioprio_class_ != 0) sqe->ioprio = static_cast<uint16_t>(ioprio_class_ << 13);
    s.sequence = sequence_++;
    io_uring_sqe_set_data64(sqe, index);
    ++in_flight;
    in_flight_bytes += s.len;
  };
  auto fail = [&](const Slot& s, const std::string& why) {
    if (error.empty()) {
      error = detail::concat(op, " of ", s.len, " bytes at offset ", s.offset, " in '", file.path(),
                             "' failed: ", why, " (transfer of ", length, " bytes at offset ",
                             offset, ")");
    }
  };

  bool all_submitted_told = !on_all_submitted;
  const auto tell_all_submitted = [&] {
    if (all_submitted_told) return;
    all_submitted_told = true;
    on_all_submitted();
  };
  for (;;) {
    bool prepared = false;
    while (error.empty() && eof_at == UINT64_MAX && seg_index < segments.size() &&
           !free_slots.empty()) {
      const IoSegment& seg = segments[seg_index];
      if (next == seg.len) {
        ++seg_index;
        next = 0;
        continue;
      }
      const size_t chunk = std::min(options_.chunk_bytes, seg.len - next);
      if (max_bytes > 0 && in_flight > 0 && in_flight_bytes + chunk > max_bytes) break;
      const unsigned index = free_slots.back();
      free_slots.pop_back();
      slots[index] = Slot{seg.offset + next, seg.buf + next, chunk, 0, true};
      prepare(index);
      next += chunk;
      prepared = true;
    }
    if (prepared || io_uring_sq_ready(&ring_) > 0) {
      int rc;
      do {
        rc = io_uring_submit(&ring_);
      } while (rc == -EINTR);
      if (rc < 0) {
        // Nothing was queued to the kernel: forget the prepared requests and report.
        error = detail::concat("io_uring_submit failed for ", op, " in '", file.path(),
                               "' at offset ", offset, ", length ", length, ": ", errno_text(-rc));
        break;
      }
    }
    if (!all_submitted_told && (seg_index == segments.size() || (seg_index + 1 == segments.size() &&
                                                                 next == segments.back().len))) {
      tell_all_submitted();
    }
    if (in_flight == 0) break;

    io_uring_cqe* cqe = nullptr;
    int rc;
    do {
      rc = io_uring_wait_cqe(&ring_, &cqe);
    } while (rc == -EINTR || rc == -EAGAIN);
    if (rc < 0) {
      throw IoError(detail::concat("io_uring_wait_cqe failed: ", errno_text(-rc)));
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      const unsigned index = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      Slot& s = slots[index];
      int res = cqe->res;
      if (hook_) res = hook_->on_complete({s.sequence, is_write, &file, s.offset, s.len}, res);
      --in_flight;
      in_flight_bytes -= s.len;  // as submitted: only a resubmission below changes it
      bool finished = true;
      if (res == -EAGAIN || res == -EINTR) {
        finished = false;  // resubmit unchanged
      } else if (res == -EPERM && ioprio_class_ != 0) {
        ioprio_class_ = 0;  // the priority is not allowed here: go on without it
        finished = false;
      } else if (res < 0) {
        fail(s, errno_text(-res));
      } else if (res == 0 && !is_write) {
        eof_at = std::min(eof_at, s.offset);
        if (eof_is_error) {
          fail(s, detail::concat("unexpected end of file at offset ", s.offset,
                                 " (the file is shorter than expected)"));
        }
      } else if (res == 0) {
        fail(s, "the write made no progress (disk full?)");
      } else if (static_cast<size_t>(res) < s.len) {
        const size_t got = static_cast<size_t>(res);
        if (!is_write && file.is_direct() && got % file.offset_align() != 0) {
          // A direct read that ends off-block has hit end of file.
          eof_at = std::min(eof_at, s.offset + got);
          if (eof_is_error) {
            fail(s, detail::concat("unexpected end of file at offset ", s.offset + got,
                                   " (the file is shorter than expected)"));
          }
        } else {
          s.offset += got;
          s.buf += got;
          s.len -= got;
          finished = false;  // short transfer: resubmit the rest
        }
      }
      if (finished || !error.empty()) {
        s.busy = false;
        free_slots.push_back(index);
      } else {
        prepare(index);
      }
    }
    io_uring_cq_advance(&ring_, seen);
  }
  tell_all_submitted();  // an error or end of file stopped submissions early
  if (!error.empty()) throw IoError(error);
  if (eof_at == UINT64_MAX) return length;
  return static_cast<size_t>(eof_at - offset);
}

}  // namespace h2oflex
