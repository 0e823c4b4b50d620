// The Transport of an `mpirun -np S` job: one process per pipeline stage, over MPI. Built only
// when CMake found MPI (H2OFLEX_HAVE_MPI).
#pragma once

#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "runtime/dist/transport.h"

namespace h2oflex {

// MPI_Init_thread in the constructor, MPI_Finalize in the destructor: MPI may be initialized
// once per process, and a job whose ranks do not all finalize is reported as failed by mpirun.
// Asks for MPI_THREAD_MULTIPLE so the engine may send from one thread while another receives.
// Create it first in main and let it outlive every MpiTransport.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // The thread support MPI granted (MPI_THREAD_SINGLE .. MPI_THREAD_MULTIPLE). Below MULTIPLE,
  // the caller must not call the transport from two threads at once.
  int thread_level() const { return thread_level_; }

 private:
  int thread_level_ = MPI_THREAD_SINGLE;
};

class MpiTransport final : public Transport {
 public:
  // MPI counts are ints, so one MPI message carries at most INT_MAX bytes; larger transfers go
  // as several. Tests pass a small max_message_bytes to exercise that path without 2 GiB.
  static constexpr size_t kMaxMessageBytes = INT_MAX;

  // Works on a duplicate of MPI_COMM_WORLD (collective: every rank constructs its transports
  // in the same order), so its tags cannot match messages of other code using MPI, and with
  // MPI_ERRORS_RETURN, so MPI's errors become TransportError instead of ending the process.
  explicit MpiTransport(const MpiSession& session, size_t max_message_bytes = kMaxMessageBytes);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // A transfer is a header (the byte count, 8 bytes) and then the data in messages of at most
  // max_message_bytes: the header lets recv name the count the sender sent and drain a
  // mismatched message whatever its size. Sending to this rank itself is refused (a blocking
  // send to self deadlocks once the message is too large to buffer).
  void send(const void* data, size_t bytes, int dst, int tag) override;
  void recv(void* data, size_t bytes, int src, int tag) override;
  // MPI_Isend of a copy (header and data as send has them); finished posts are released on the
  // next post, wait_posted, barrier, and in the destructor (which waits for the rest).
  void post(const void* data, size_t bytes, int dst, int tag) override;
  void wait_posted() override;
  void barrier() override;
  // Broadcasts root's byte count first: a rank that passed a different count throws
  // TransportError (and should abort_all: the others are already in the data broadcast).
  void broadcast(void* data, size_t bytes, int root) override;
  // Prints "h2oflex rank R/S: <message>" to stderr and calls MPI_Abort, which makes mpirun
  // kill every rank of the job and exit nonzero: no rank is left waiting on this one.
  [[noreturn]] void abort_all(std::string_view message) override;

  size_t max_message_bytes() const { return max_message_bytes_; }
  // Data messages this transport has sent (headers not counted): how tests see the chunking.
  size_t data_messages_sent() const { return data_messages_sent_.load(); }
  // The largest tag a caller may use (MPI guarantees at least 32767).
  int max_tag() const { return max_tag_; }

 private:
  void check_peer(const char* what, size_t bytes, int peer, int tag) const;
  // Releases the posts whose messages have gone.
  void release_finished_posts();

  // A posted message: its copy and the requests of its header and data messages.
  struct Posted {
    uint64_t header = 0;
    std::vector<char> data;
    std::vector<MPI_Request> requests;
  };
  std::deque<std::unique_ptr<Posted>> posted_;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int max_tag_ = 32767;
  size_t max_message_bytes_;
  std::atomic<size_t> data_messages_sent_{0};
};

}  // namespace h2oflex
