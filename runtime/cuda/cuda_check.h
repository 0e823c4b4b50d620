// Error checks for CUDA runtime and cuBLAS calls: a failing call throws CudaError naming the
// call, file:line and the library's own error name and text.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "runtime/core/error.h"

namespace h2oflex::cuda {

// A CUDA runtime or cuBLAS call failed (a bug, a lost device or exhausted device memory).
class CudaError : public InternalError {
 public:
  using InternalError::InternalError;
};

namespace detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  throw CudaError(::h2oflex::detail::concat(file, ":", line, ": ", call,
                                            " failed: ", cudaGetErrorName(err), " (",
                                            cudaGetErrorString(err), ")"));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call,
                                            const char* file, int line) {
  throw CudaError(::h2oflex::detail::concat(file, ":", line, ": ", call,
                                            " failed: ", cublasGetStatusName(status), " (",
                                            cublasGetStatusString(status), ")"));
}

// True when H2OFLEX_CUDA_SYNC is set to a value other than "0" or "" (read once).
bool synchronous_launches();

// CUDA_CHECK_LAUNCH's body: throws CudaError naming the kernel, file:line and the error.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace detail
}  // namespace h2oflex::cuda

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    const cudaError_t h2oflex_cuda_err_ = (call);                                              \
    if (h2oflex_cuda_err_ != cudaSuccess) {                                                    \
      ::h2oflex::cuda::detail::throw_cuda_error(h2oflex_cuda_err_, #call, __FILE__, __LINE__); \
    }                                                                                          \
  } while (0)

#define CUBLAS_CHECK(call)                                                                 \
  do {                                                                                     \
    const cublasStatus_t h2oflex_cublas_status_ = (call);                                  \
    if (h2oflex_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                 \
      ::h2oflex::cuda::detail::throw_cublas_error(h2oflex_cublas_status_, #call, __FILE__, \
                                                  __LINE__);                               \
    }                                                                                      \
  } while (0)

// After a kernel launch (or a library call that launches kernels): reports a launch error at
// the launch site, naming `kernel`. With H2OFLEX_CUDA_SYNC=1 in the environment every launch is
// also waited for, so an error the kernel itself raises (an illegal address, say) is reported
// here with the kernel's name instead of at some later, unrelated call.
#define CUDA_CHECK_LAUNCH(kernel) ::h2oflex::cuda::detail::check_launch(kernel, __FILE__, __LINE__)
