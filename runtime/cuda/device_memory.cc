#include "runtime/cuda/device_memory.h"

#include <memory>

#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/device_guard.h"
#include "runtime/cuda/streams.h"

namespace h2oflex::cuda {

Tensor device_empty(Shape shape, DType dtype, int device) {
  const Device where = Device::cuda(device);
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  if (bytes == 0) return Tensor::wrap(nullptr, std::move(shape), dtype, where);
  const DeviceGuard guard(device);
  void* ptr = nullptr;
  CUDA_CHECK(cudaMalloc(&ptr, bytes));
  std::shared_ptr<void> holder(ptr, [device](void* p) {
    const DeviceGuard free_guard(device, std::nothrow);  // a deleter must not throw
    cudaFree(p);
  });
  return Tensor::wrap(ptr, std::move(shape), dtype, where, std::move(holder));
}

Tensor device_empty(Shape shape, DType dtype) {
  return device_empty(std::move(shape), dtype, current_device());
}

Tensor device_zeros(Shape shape, DType dtype) {
  Tensor t = device_empty(std::move(shape), dtype);
  if (t.nbytes() > 0) {
    cudaStream_t stream = current_stream();
    CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, t.nbytes(), stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  return t;
}

void copy_async(const Tensor& dst, const Tensor& src, cudaStream_t stream) {
  H2OFLEX_CHECK(dst.nbytes() == src.nbytes(), "copy of ", src.nbytes(), " bytes into ",
                dst.nbytes(), " bytes");
  if (src.nbytes() == 0) return;
  // Unified addressing lets the runtime infer the direction (and the devices) from the pointers.
  CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(), cudaMemcpyDefault, stream));
}

Tensor to_device(const Tensor& host, int device) {
  H2OFLEX_CHECK(host.device().is_cpu(), "to_device expects a host tensor");
  Tensor dev = device_empty(host.shape(), host.dtype(), device).as_packed(host.packed());
  const DeviceGuard guard(device);
  cudaStream_t stream = current_stream();
  copy_async(dev, host, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return dev;
}

Tensor to_device(const Tensor& host) {
  return to_device(host, current_device());
}

Tensor to_host(const Tensor& device) {
  H2OFLEX_CHECK(device.device().is_cuda(), "to_host expects a device tensor");
  Tensor host = Tensor::empty(device.shape(), device.dtype()).as_packed(device.packed());
  const DeviceGuard guard(device.device().index);
  cudaStream_t stream = current_stream();
  copy_async(host, device, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

}  // namespace h2oflex::cuda
