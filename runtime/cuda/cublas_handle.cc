#include "runtime/cuda/cublas_handle.h"

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/device_table.h"

namespace h2oflex::cuda {
namespace {

// One handle, created by DeviceTable with its device current.
class Handle {
 public:
  explicit Handle(int device) : device_(device) {
    CUBLAS_CHECK(cublasCreate(&handle_));
    // Plain fp32 GEMMs stay fp32 (no TF32), so the f32 path matches the CPU to ~1e-6.
    CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
  }
  ~Handle() {
    // Destroyed at thread exit, when errors are not actionable.
    const DeviceGuard guard(device_, std::nothrow);
    cublasDestroy(handle_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  int device_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

cublasHandle_t cublas_handle(cudaStream_t stream) {
  thread_local DeviceTable<Handle> handles;
  const cublasHandle_t h = handles.get(current_device()).get();
  CUBLAS_CHECK(cublasSetStream(h, stream));
  return h;
}

}  // namespace h2oflex::cuda
