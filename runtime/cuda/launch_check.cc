// CUDA_CHECK_LAUNCH: launch errors named by kernel, and the synchronous mode that makes every
// kernel's own faults surface at its launch site.
#include <cstdlib>
#include <cstring>

#include "runtime/cuda/cuda_check.h"

namespace h2oflex::cuda::detail {

bool synchronous_launches() {
  static const bool on = [] {
    const char* v = std::getenv("H2OFLEX_CUDA_SYNC");
    return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw CudaError(::h2oflex::detail::concat(file, ":", line, ": launching ", kernel,
                                              " failed: ", cudaGetErrorName(err), " (",
                                              cudaGetErrorString(err), ")"));
  }
  if (!synchronous_launches()) return;
  // Every stream of the device: the kernel's stream is not known here, and a synchronous run
  // has nothing else in flight worth protecting.
  err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    throw CudaError(::h2oflex::detail::concat(
        file, ":", line, ": ", kernel, " failed while running: ", cudaGetErrorName(err), " (",
        cudaGetErrorString(err), "); H2OFLEX_CUDA_SYNC waited for this launch, so the error is ",
        kernel, "'s or of work queued before it"));
  }
}

}  // namespace h2oflex::cuda::detail
