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

// After a kernel launch: reports launch-configuration errors at the launch site.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
