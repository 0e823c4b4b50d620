#include "runtime/dist/mpi_transport.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/core/error.h"

namespace h2oflex {
namespace {

// Throws TransportError naming the call and MPI's own text for the error code.
void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw TransportError(detail::concat(call, " failed: ", std::string(text, len)));
}

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) throw TransportError("MPI is already initialized: create one MpiSession");
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_), "MPI_Init_thread");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

MpiTransport::MpiTransport(const MpiSession&, size_t max_message_bytes)
    : max_message_bytes_(max_message_bytes) {
  if (max_message_bytes < 1 || max_message_bytes > kMaxMessageBytes) {
    throw TransportError(detail::concat("max_message_bytes ", max_message_bytes, " is outside [1, ",
                                        kMaxMessageBytes, "]"));
  }
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  void* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  if (found) max_tag_ = *static_cast<int*>(tag_ub);
}

MpiTransport::~MpiTransport() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || comm_ == MPI_COMM_NULL) return;
  for (auto& p : posted_) {
    MPI_Waitall(static_cast<int>(p->requests.size()), p->requests.data(), MPI_STATUSES_IGNORE);
  }
  MPI_Comm_free(&comm_);
}

void MpiTransport::check_peer(const char* what, size_t bytes, int peer, int tag) const {
  if (peer < 0 || peer >= size_ || peer == rank_ || tag < 0 || tag > max_tag_) {
    throw TransportError(detail::concat(
        what, " of ", bytes, " bytes on rank ", rank_, " refused: peer rank ", peer, " (valid: 0..",
        size_ - 1, " except ", rank_, "), tag ", tag, " (valid: 0..", max_tag_, ")"));
  }
}

void MpiTransport::send(const void* data, size_t bytes, int dst, int tag) {
  check_peer("send", bytes, dst, tag);
  const uint64_t header = bytes;
  check_mpi(MPI_Send(&header, 1, MPI_UINT64_T, dst, tag, comm_), "MPI_Send (header)");
  const auto* p = static_cast<const char*>(data);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(max_message_bytes_, bytes - done);
    check_mpi(MPI_Send(p + done, static_cast<int>(n), MPI_BYTE, dst, tag, comm_), "MPI_Send");
    done += n;
    ++data_messages_sent_;
  }
}

void MpiTransport::recv(void* data, size_t bytes, int src, int tag) {
  check_peer("recv", bytes, src, tag);
  uint64_t header = 0;
  check_mpi(MPI_Recv(&header, 1, MPI_UINT64_T, src, tag, comm_, MPI_STATUS_IGNORE),
            "MPI_Recv (header)");
  const size_t sent = header;
  // The sender split `sent` bytes by its own max_message_bytes: probing each message for its
  // size means the receiver need not know that limit.
  auto* p = static_cast<char*>(data);
  std::vector<char> discard;
  size_t done = 0;
  while (done < sent) {
    MPI_Message message;
    MPI_Status status;
    check_mpi(MPI_Mprobe(src, tag, comm_, &message, &status), "MPI_Mprobe");
    int count = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    const auto n = static_cast<size_t>(count);
    char* into = nullptr;
    if (sent == bytes && n <= bytes - done) {
      into = p + done;
    } else {  // a mismatch: drain the message so the next transfer starts clean
      discard.resize(std::max<size_t>(n, 1));
      into = discard.data();
    }
    check_mpi(MPI_Mrecv(into, count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    done += n;
    if (n == 0) break;  // cannot happen from our send; do not spin on a malformed peer
  }
  if (sent != bytes || done != sent) {
    throw TransportError(detail::concat("recv on rank ", rank_, " from rank ", src, " (tag ", tag,
                                        "): expected ", bytes, " bytes, got ", sent));
  }
}

void MpiTransport::post(const void* data, size_t bytes, int dst, int tag) {
  check_peer("post", bytes, dst, tag);
  release_finished_posts();
  auto p = std::make_unique<Posted>();
  p->header = bytes;
  const auto* from = static_cast<const char*>(data);
  p->data.assign(from, from + bytes);
  p->requests.push_back(MPI_REQUEST_NULL);
  check_mpi(MPI_Isend(&p->header, 1, MPI_UINT64_T, dst, tag, comm_, &p->requests.back()),
            "MPI_Isend (header)");
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(max_message_bytes_, bytes - done);
    p->requests.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Isend(p->data.data() + done, static_cast<int>(n), MPI_BYTE, dst, tag, comm_,
                        &p->requests.back()),
              "MPI_Isend");
    done += n;
    ++data_messages_sent_;
  }
  posted_.push_back(std::move(p));
}

void MpiTransport::release_finished_posts() {
  while (!posted_.empty()) {
    Posted& p = *posted_.front();
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(p.requests.size()), p.requests.data(), &done,
                          MPI_STATUSES_IGNORE),
              "MPI_Testall");
    if (!done) return;
    posted_.pop_front();
  }
}

void MpiTransport::wait_posted() {
  for (auto& p : posted_) {
    check_mpi(
        MPI_Waitall(static_cast<int>(p->requests.size()), p->requests.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall");
  }
  posted_.clear();
}

void MpiTransport::barrier() {
  release_finished_posts();
  check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

void MpiTransport::broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= size_) {
    throw TransportError(detail::concat("broadcast of ", bytes, " bytes on rank ", rank_,
                                        " refused: root ", root, " (valid: 0..", size_ - 1, ")"));
  }
  uint64_t root_bytes = bytes;
  check_mpi(MPI_Bcast(&root_bytes, 1, MPI_UINT64_T, root, comm_), "MPI_Bcast (byte count)");
  if (root_bytes != bytes) {
    throw TransportError(detail::concat("broadcast on rank ", rank_, " from root ", root,
                                        ": expected ", bytes, " bytes, root sends ", root_bytes));
  }
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(max_message_bytes_, bytes - done);
    check_mpi(MPI_Bcast(p + done, static_cast<int>(n), MPI_BYTE, root, comm_), "MPI_Bcast");
    done += n;
  }
}

void MpiTransport::abort_all(std::string_view message) {
  // One fprintf per message keeps ranks' lines from interleaving mid-line on a shared stderr.
  std::fprintf(stderr, "h2oflex rank %d/%d: %.*s\n", rank_, size_, static_cast<int>(message.size()),
               message.data());
  std::fflush(stderr);
  MPI_Abort(comm_ == MPI_COMM_NULL ? MPI_COMM_WORLD : comm_, 1);
  std::_Exit(1);  // MPI_Abort does not return; if it ever did, still end this rank
}

}  // namespace h2oflex
