// Chunked, pipelined disk reads and writes on one io_uring ring.
//
// A transfer is split into chunks (default 1 MiB) and up to queue_depth of them are in flight at
// once. Short transfers and -EAGAIN are resubmitted for the remainder; any other error stops new
// submissions, waits for the ones in flight (so the caller's buffer is no longer touched) and
// throws IoError naming the file, offset, length and errno text. Buffers that lie inside a
// registered region use the fixed-buffer opcodes. One engine serves one thread at a time (calls
// are serialized); give each queue its own engine.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "offload/io/disk_file.h"

namespace h2oflex {

inline constexpr int kIoprioClassRealTime = 1;  // IOPRIO_CLASS_RT

struct IoEngineOptions {
  size_t chunk_bytes = 1 << 20;
  unsigned queue_depth = 32;
  // A kernel thread polls the submission queue: saves syscalls but keeps a core busy.
  bool sqpoll = false;
  // Slots in the sparse fixed-buffer table.
  unsigned registered_slots = 256;
  // The requests' I/O priority class (ioprio_set(2)'s IOPRIO_CLASS_*; 0: the thread's). A class
  // the process may not use (real time needs CAP_SYS_ADMIN or CAP_SYS_NICE) is dropped at the
  // first request the kernel refuses, and the request is resubmitted without it.
  int ioprio_class = 0;
  // > 0: no request is submitted that would put more than this many bytes in flight (one request
  // always may), whatever their count. A read queued ahead of a write holds the device that long.
  uint64_t max_in_flight_bytes = 0;
};

// What one submitted request was, as shown to a fault hook.
struct IoRequestInfo {
  uint64_t sequence;  // 0-based, counts every submission of this engine including resubmits
  bool is_write;
  const DiskFile* file;
  uint64_t offset;
  size_t length;
};

// The injectable I/O layer: sees every completion and may replace its result (a negative errno
// or a byte count), e.g. to inject EIO on the Nth request, ENOSPC on writes or a short read.
// Installed on several engines, it is called from their threads at once.
class IoFaultHook {
 public:
  virtual ~IoFaultHook() = default;
  virtual int on_complete(const IoRequestInfo& request, int result) = 0;
};

// One piece of a scattered transfer: `len` bytes at file `offset` from / to `buf`.
struct IoSegment {
  uint64_t offset;
  char* buf;
  size_t len;
};

class IoEngine {
 public:
  explicit IoEngine(IoEngineOptions options = {});
  ~IoEngine();
  IoEngine(const IoEngine&) = delete;
  IoEngine& operator=(const IoEngine&) = delete;

  // Reads exactly `length` bytes; reaching end of file is an IoError. On a direct file, offset,
  // length and buffer must respect the file's alignment (InternalError otherwise).
  void read(const DiskFile& file, uint64_t offset, void* buffer, size_t length);
  // Reads up to `length` bytes, stopping at end of file; returns the bytes read.
  size_t read_upto(const DiskFile& file, uint64_t offset, void* buffer, size_t length);
  // Writes exactly `length` bytes (same alignment rules as read).
  void write(const DiskFile& file, uint64_t offset, const void* buffer, size_t length);

  // Writes every segment, keeping up to queue_depth requests in flight across segments (many
  // small scattered writes cost one round of submissions, not one round trip each).
  void write_scattered(const DiskFile& file, std::span<const IoSegment> segments);
  // Reads every segment, the same way; end of file inside a segment is an error.
  // `on_all_submitted` (optional) runs once the last request has gone to the kernel, while the
  // ones in flight are still read (resubmissions of short reads may follow it): the caller can
  // start another engine's requests then, so the device does not drain between two transfers.
  void read_scattered(const DiskFile& file, std::span<const IoSegment> segments,
                      const std::function<void()>& on_all_submitted = {});

  // Registers [ptr, ptr + bytes) as fixed buffers (split into pieces of at most 1 GiB). Returns
  // false when the kernel refuses (e.g. memlock limit): I/O then uses the ordinary opcodes.
  bool register_buffer(void* ptr, size_t bytes);
  void unregister_buffer(void* ptr);

  void set_fault_hook(std::shared_ptr<IoFaultHook> hook);
  const IoEngineOptions& options() const { return options_; }
  uint64_t requests_submitted() const { return sequence_; }
  // Calls that moved bytes (read, write, read_scattered, ...): each drains its requests before
  // returning, so the device runs dry between two of them.
  uint64_t submissions() const { return submissions_; }
  // The priority class requests carry now (0 once the kernel refused the one asked for).
  int ioprio_class() const { return ioprio_class_; }
  uint64_t fixed_requests_submitted() const { return fixed_requests_; }

 private:
  struct Region {
    char* begin;
    size_t bytes;
    unsigned slot;
    void* owner;  // the pointer passed to register_buffer
  };
  size_t run(bool is_write, const DiskFile& file, std::span<const IoSegment> segments,
             bool eof_is_error, const std::function<void()>& on_all_submitted = {});
  int fixed_slot_for(const char* ptr, size_t length) const;

  IoEngineOptions options_;
  io_uring ring_{};
  std::mutex mutex_;  // one transfer at a time
  std::mutex regions_mutex_;
  std::vector<Region> regions_;
  std::vector<bool> slot_used_;
  bool fixed_table_ = false;
  std::shared_ptr<IoFaultHook> hook_;
  uint64_t sequence_ = 0;
  uint64_t submissions_ = 0;
  uint64_t fixed_requests_ = 0;
  int ioprio_class_ = 0;
};

}  // namespace h2oflex
