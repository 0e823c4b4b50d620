#include "runtime/dist/transport.h"

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

}  // namespace h2oflex
