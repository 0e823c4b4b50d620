// The job dist_mpi_abort_np* starts (mpi_abort_check.cmake checks how it ends): rank 1 calls
// abort_all while rank 0 waits in recv for a message rank 1 never sends, and every other rank
// waits on rank 0. Without a working abort_all the job would hang.
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "runtime/dist/mpi_transport.h"

int main(int argc, char** argv) {
  h2oflex::MpiSession session(&argc, &argv);
  h2oflex::MpiTransport transport(session);
  if (transport.size() < 2) {
    std::fprintf(stderr, "dist_mpi_abort_probe needs at least 2 ranks\n");
    return 2;
  }
  char buf[8] = {};
  try {
    if (transport.rank() == 1) {
      // Give rank 0 time to block in recv first, the case that would hang.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      transport.abort_all("rank 1 stops the job on purpose");
    }
    const int src = transport.rank() == 0 ? 1 : 0;
    transport.recv(buf, sizeof buf, src, 5);
    std::printf("rank %d received from rank %d\n", transport.rank(), src);
  } catch (const std::exception& e) {
    transport.abort_all(e.what());
  }
  return 0;
}
