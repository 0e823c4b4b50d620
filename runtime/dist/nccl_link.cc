#include "runtime/dist/nccl_link.h"

#include <array>
#include <cstring>
#include <new>
#include <vector>

#include "runtime/core/error.h"

namespace h2oflex {
namespace {

void check_nccl(ncclResult_t rc, const char* call) {
  if (rc == ncclSuccess) return;
  throw TransportError(detail::concat(call, " failed: ", ncclGetErrorString(rc)));
}

void check_cuda(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  throw TransportError(detail::concat(call, " failed: ", cudaGetErrorString(rc)));
}

// The link's calls run on the device it was made on, whatever the caller's current device is.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  // For the destructor: switches when it can, never throws (a destructor that throws during
  // unwinding ends the process before the first error is reported).
  OnDevice(int device, std::nothrow_t) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = device;
      return;
    }
    if (previous_ != device && cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
  }
  ~OnDevice() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

using Uuid = std::array<char, sizeof(cudaUUID_t)>;

}  // namespace

std::unique_ptr<NcclLink> NcclLink::connect_if_gpus_distinct(Transport& t) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  // Every rank's UUID in turn from its rank: all ranks end up with the same list.
  std::vector<Uuid> uuids(static_cast<size_t>(t.size()));
  for (int r = 0; r < t.size(); ++r) {
    Uuid u{};
    if (r == t.rank()) std::memcpy(u.data(), &prop.uuid, u.size());
    t.broadcast(u.data(), u.size(), r);
    uuids[static_cast<size_t>(r)] = u;
  }
  for (size_t a = 0; a < uuids.size(); ++a) {
    for (size_t b = a + 1; b < uuids.size(); ++b) {
      if (uuids[a] == uuids[b]) return nullptr;
    }
  }
  return std::unique_ptr<NcclLink>(new NcclLink(t, device));
}

NcclLink::NcclLink(Transport& t, int device) : device_(device), rank_(t.rank()), size_(t.size()) {
  const OnDevice on(device_);
  ncclUniqueId id{};
  if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  t.broadcast(&id, sizeof id, 0);
  check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
}

NcclLink::~NcclLink() {
  const OnDevice on(device_, std::nothrow);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (comm_ != nullptr) ncclCommDestroy(comm_);
}

void NcclLink::check_peer(const char* what, size_t bytes, int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw TransportError(detail::concat("NCCL ", what, " of ", bytes, " bytes on rank ", rank_,
                                        " refused: peer rank ", peer, " (valid: 0..", size_ - 1,
                                        " except ", rank_, ")"));
  }
}

void NcclLink::send(const void* device_data, size_t bytes, int peer) {
  check_peer("send", bytes, peer);
  const OnDevice on(device_);
  check_nccl(ncclSend(device_data, bytes, ncclUint8, peer, comm_, stream_), "ncclSend");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (ncclSend)");
}

void NcclLink::recv(void* device_data, size_t bytes, int peer) {
  check_peer("recv", bytes, peer);
  const OnDevice on(device_);
  check_nccl(ncclRecv(device_data, bytes, ncclUint8, peer, comm_, stream_), "ncclRecv");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (ncclRecv)");
}

}  // namespace h2oflex
