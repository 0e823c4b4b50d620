// Transport: how the processes running pipeline stages move bytes to each other. The engine
// codes against this interface, so one binary runs as a single process (LocalTransport) or as
// one stage of an `mpirun -np S` job (MpiTransport, mpi_transport.h) without knowing which.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace h2oflex {

// A transfer that cannot be done as asked: a bad peer or tag, a byte count the peers disagree
// on, an error the transport's library reported. The other ranks may be blocked waiting for
// this one, so whoever catches it should end the job with Transport::abort_all.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // This process's index in [0, size()), and how many processes the job has.
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Blocking point-to-point transfer of `bytes` bytes (0 is allowed). Messages between one
  // pair of ranks with one tag arrive in the order they were sent. recv throws TransportError
  // naming the expected and the received byte count when they differ; the message is consumed
  // either way, so the next transfer between the pair is not confused by it.
  virtual void send(const void* data, size_t bytes, int dst, int tag) = 0;
  virtual void recv(void* data, size_t bytes, int src, int tag) = 0;

  // A send that does not wait for the receiver: the bytes are copied and go in the background,
  // in order with this pair's other messages of this tag; recv takes them as any other. For
  // messages against the direction of the blocking sends (token ids from the last stage back to
  // the others), where a blocking send would close a cycle of ranks each waiting on the next.
  virtual void post(const void* data, size_t bytes, int dst, int tag) = 0;
  // Returns once every posted message has been received.
  virtual void wait_posted() = 0;

  // Collectives: every rank must call them, in the same order. broadcast copies root's
  // `bytes` bytes into every other rank's `data`; all ranks pass the same byte count.
  virtual void barrier() = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;

  // Ends every process of the job, this one included, after printing `message` to stderr. A
  // rank that fails must call this rather than return: the others may wait on it forever.
  [[noreturn]] virtual void abort_all(std::string_view message) = 0;
};

// The single-process job: size 1, collectives are no-ops, and there is no peer to send to,
// so send and recv throw (a stage plan of one stage never needs them).
class LocalTransport final : public Transport {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void send(const void* data, size_t bytes, int dst, int tag) override;
  void recv(void* data, size_t bytes, int src, int tag) override;
  void post(const void* data, size_t bytes, int dst, int tag) override {
    send(data, bytes, dst, tag);
  }
  void wait_posted() override {}
  void barrier() override {}
  void broadcast(void* data, size_t bytes, int root) override;
  // Prints "h2oflex: <message>" and exits with status 1 without running static destructors
  // (another thread may still be using them).
  [[noreturn]] void abort_all(std::string_view message) override;
};

// Text of a length the receiver does not know (a JSON document): its byte count goes first.
void send_text(Transport& transport, std::string_view text, int dst, int tag);
std::string recv_text(Transport& transport, int src, int tag);
// Root's `text` on every rank (the others' argument is ignored). A collective.
std::string broadcast_text(Transport& transport, std::string text, int root);

// The transport of this process's job: set by main when the process is one rank of an
// `mpirun -np S` job (MpiTransport), null in a single-process run. Commands pass it to the
// engine (PipelineSpec::transport) and send their errors to its abort_all.
Transport* job_transport();
void set_job_transport(Transport* transport);
// More than one process: this one is a stage of a pipeline-parallel job.
bool in_multi_process_job();
// Whether this process speaks for the job (progress, results, output files): the single
// process, or rank 0 of a multi-process job.
bool speaks_for_job();
// Every rank's copy of rank 0's value (a setting each rank could otherwise decide differently,
// e.g. one measured on the spot); the value itself in a single-process job.
template <typename T>
T agreed_by_job(T value) {
  if (in_multi_process_job()) job_transport()->broadcast(&value, sizeof value, 0);
  return value;
}

}  // namespace h2oflex
