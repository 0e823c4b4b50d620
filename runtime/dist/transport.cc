#include "runtime/dist/transport.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "runtime/core/error.h"

namespace h2oflex {

void LocalTransport::send(const void*, size_t bytes, int dst, int tag) {
  throw TransportError(detail::concat("send of ", bytes, " bytes to rank ", dst, " (tag ", tag,
                                      ") refused: a single-process job has no other rank"));
}

void LocalTransport::recv(void*, size_t bytes, int src, int tag) {
  throw TransportError(detail::concat("recv of ", bytes, " bytes from rank ", src, " (tag ", tag,
                                      ") refused: a single-process job has no other rank"));
}

void LocalTransport::broadcast(void*, size_t bytes, int root) {
  if (root != 0) {
    throw TransportError(detail::concat("broadcast of ", bytes, " bytes from root ", root,
                                        " refused: a single-process job has only rank 0"));
  }
}

void LocalTransport::abort_all(std::string_view message) {
  std::fprintf(stderr, "h2oflex: %.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::_Exit(1);
}

void send_text(Transport& t, std::string_view text, int dst, int tag) {
  const uint64_t n = text.size();
  t.send(&n, sizeof n, dst, tag);
  t.send(text.data(), text.size(), dst, tag);
}

std::string recv_text(Transport& t, int src, int tag) {
  uint64_t n = 0;
  t.recv(&n, sizeof n, src, tag);
  std::string text(n, '\0');
  t.recv(text.data(), n, src, tag);
  return text;
}

std::string broadcast_text(Transport& t, std::string text, int root) {
  uint64_t n = text.size();
  t.broadcast(&n, sizeof n, root);
  text.resize(n);
  t.broadcast(text.data(), n, root);
  return text;
}

namespace {
Transport* g_job_transport = nullptr;
}  // namespace

Transport* job_transport() {
  return g_job_transport;
}

void set_job_transport(Transport* transport) {
  g_job_transport = transport;
}

bool in_multi_process_job() {
  return g_job_transport != nullptr && g_job_transport->size() > 1;
}

bool speaks_for_job() {
  return g_job_transport == nullptr || g_job_transport->rank() == 0;
}

}  // namespace h2oflex
