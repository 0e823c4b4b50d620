// NcclLink under mpiexec -n 2 with a GPU per rank (dist_nccl_link_np2; run by tools/gpu_check.sh
// on a machine with two GPUs or more): rank 0's device buffers reach rank 1's device intact, and
// equal what the host path (MpiTransport, the twin) carries. Exits 0 on success, 1 on a mismatch.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "runtime/dist/mpi_transport.h"
#include "runtime/dist/nccl_link.h"

namespace {

std::vector<unsigned char> pattern(size_t bytes) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>(i * 131 + bytes);
  return v;
}

bool check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(rc));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  h2oflex::MpiSession session(&argc, &argv);
  h2oflex::MpiTransport world(session);
  if (world.size() != 2) world.abort_all("run with exactly 2 ranks");
  std::unique_ptr<h2oflex::NcclLink> link = h2oflex::NcclLink::connect_if_gpus_distinct(world);
  if (!link) world.abort_all("the two ranks share a GPU: no NCCL link");
  int failures = 0;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4097}, size_t{3} << 20}) {
    const std::vector<unsigned char> sent = pattern(bytes);
    void* dev = nullptr;
    if (!check(cudaMalloc(&dev, bytes + 1), "cudaMalloc")) world.abort_all("cudaMalloc failed");
    std::vector<unsigned char> over_nccl(bytes, 0xEE), over_host(bytes, 0xEE);
    if (world.rank() == 0) {
      check(cudaMemcpy(dev, sent.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
      link->send(dev, bytes, 1);
      world.send(sent.data(), bytes, 1, 5);
    } else {
      check(cudaMemset(dev, 0, bytes + 1), "cudaMemset");
      link->recv(dev, bytes, 0);
      check(cudaMemcpy(over_nccl.data(), dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      world.recv(over_host.data(), bytes, 0, 5);
      if (over_nccl != sent || over_host != over_nccl) {
        std::fprintf(stderr, "rank 1: %zu bytes over NCCL differ from what was sent\n", bytes);
        ++failures;
      }
    }
    cudaFree(dev);
  }
  world.broadcast(&failures, sizeof failures, 1);
  link.reset();
  if (world.rank() == 0) std::printf("NCCL link: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
