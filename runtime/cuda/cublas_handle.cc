#include "runtime/cuda/cublas_handle.h"

#include "runtime/cuda/cuda_check.h"

namespace h2oflex::cuda {
namespace {

struct ThreadHandle {
  cublasHandle_t handle = nullptr;
  ~ThreadHandle() {
    if (handle != nullptr) cublasDestroy(handle);  // errors at thread exit are not actionable
  }
};

}  // namespace

cublasHandle_t cublas_handle(cudaStream_t stream) {
  thread_local ThreadHandle th;
  if (th.handle == nullptr) {
    CUBLAS_CHECK(cublasCreate(&th.handle));
    // Plain fp32 GEMMs stay fp32 (no TF32), so the f32 path matches the CPU to ~1e-6.
    CUBLAS_CHECK(cublasSetMathMode(th.handle, CUBLAS_DEFAULT_MATH));
  }
  CUBLAS_CHECK(cublasSetStream(th.handle, stream));
  return th.handle;
}

}  // namespace h2oflex::cuda
