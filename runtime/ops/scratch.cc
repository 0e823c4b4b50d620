#include "runtime/ops/scratch.h"

#include <algorithm>
#include <array>

#include "runtime/ops/ops.h"

namespace h2oflex::ops {

Tensor scratch(Scratch purpose, Shape shape, DType dtype, Device device) {
  constexpr size_t kPurposes = static_cast<size_t>(Scratch::kCount);
  // [device][purpose]: byte buffers, reinterpreted per request.
  thread_local std::array<std::array<Tensor, kPurposes>, 2> buffers;
  Tensor& buf = buffers[device == Device::CUDA ? 1 : 0][static_cast<size_t>(purpose)];
  const int64_t bytes = shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype));
  const int64_t have = buf.defined() ? static_cast<int64_t>(buf.nbytes()) : 0;
  if (have < bytes) {
    // Grow geometrically so slowly growing requests do not reallocate every time.
    const int64_t grown = std::max<int64_t>(bytes, have * 3 / 2);
    buf = empty({(grown + 3) / 4}, DType::F32, device);
  }
  return Tensor::wrap(buf.raw(), std::move(shape), dtype, device, buf.holder());
}

Tensor scratch_copy(Scratch purpose, const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor out = scratch(purpose, t.shape(), t.dtype(), device);
  copy(t, out);
  return out;
}

}  // namespace h2oflex::ops
