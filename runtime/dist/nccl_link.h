// The DeviceLink of a job whose ranks each drive a GPU of their own: NCCL point-to-point
// (ncclSend / ncclRecv) over one communicator of all the job's ranks, bootstrapped over the
// job's Transport (rank 0's ncclUniqueId, broadcast). Built when CMake finds NCCL beside CUDA
// and MPI (H2OFLEX_HAVE_NCCL).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "runtime/dist/device_link.h"
#include "runtime/dist/transport.h"

namespace h2oflex {

class NcclLink final : public DeviceLink {
 public:
  // A collective: every rank calls it, with its current CUDA device the one it computes on.
  // Null on every rank when two ranks share a GPU (NCCL refuses a communicator with one device
  // twice): the ranks compare their devices' UUIDs first, so all of them decide alike.
  static std::unique_ptr<NcclLink> connect_if_gpus_distinct(Transport& bootstrap);
  ~NcclLink() override;
  NcclLink(const NcclLink&) = delete;
  NcclLink& operator=(const NcclLink&) = delete;

  // On the link's own stream, waited for before returning: the caller has finished writing
  // (send) the data, and reads it (recv) on any stream after.
  void send(const void* device_data, size_t bytes, int peer) override;
  void recv(void* device_data, size_t bytes, int peer) override;

 private:
  NcclLink(Transport& bootstrap, int device);
  void check_peer(const char* what, size_t bytes, int peer) const;

  int device_ = 0;
  int rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace h2oflex
