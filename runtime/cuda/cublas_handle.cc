#include "runtime/cuda/cublas_handle.h"

#include "runtime/core/gpu_memory_reserve.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/device_table.h"

namespace h2oflex::cuda {
namespace {

// One handle with its own workspace of the size the memory plan charges, created by DeviceTable
// with its device current. Without a workspace of its own cuBLAS takes one from the driver per
// stream, memory nothing counts.
class Handle {
 public:
  explicit Handle(int device) : device_(device) {
    CUBLAS_CHECK(cublasCreate(&handle_));
    // Plain fp32 GEMMs stay fp32 (no TF32), so the f32 path matches the CPU to ~1e-6.
    CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    CUDA_CHECK(cudaMalloc(&workspace_, gpu_reserve::kCublasWorkspaceBytes));
  }
  ~Handle() {
    // Destroyed at thread exit, when errors are not actionable.
    const DeviceGuard guard(device_, std::nothrow);
    cublasDestroy(handle_);
    cudaFree(workspace_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  cublasHandle_t bind(cudaStream_t stream) {
    if (bound_ && stream == stream_) return handle_;
    CUBLAS_CHECK(cublasSetStream(handle_, stream));
    // cublasSetStream puts the handle back on cuBLAS's default workspace: give it ours again.
    CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_, gpu_reserve::kCublasWorkspaceBytes));
    stream_ = stream;
    bound_ = true;
    return handle_;
  }

 private:
  int device_;
  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool bound_ = false;
};

}  // namespace

cublasHandle_t cublas_handle(cudaStream_t stream) {
  thread_local DeviceTable<Handle> handles;
  return handles.get(current_device()).bind(stream);
}

}  // namespace h2oflex::cuda
