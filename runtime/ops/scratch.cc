#include "runtime/ops/scratch.h"

#include <algorithm>
#include <array>
#include <vector>

#include "runtime/ops/ops.h"

namespace h2oflex::ops {

namespace {

constexpr size_t kPurposes = static_cast<size_t>(Scratch::kCount);
using Buffers = std::array<Tensor, kPurposes>;  // byte buffers, reinterpreted per request

// This thread's buffers of `device`: slot 0 is the host, slot 1 + i is cuda:i, so each GPU has
// its own buffers (a buffer lives on one device).
Buffers& buffers_of(Device device) {
  thread_local std::vector<Buffers> per_device(2);  // the host and cuda:0 from the start
  H2OFLEX_CHECK(device.index >= 0, "scratch on ", device.name());
  const size_t slot = device.is_cpu() ? 0 : 1 + static_cast<size_t>(device.index);
  if (per_device.size() <= slot) per_device.resize(slot + 1);
  return per_device[slot];
}

}  // namespace

Tensor scratch(Scratch purpose, Shape shape, DType dtype, Device device) {
  Tensor& buf = buffers_of(device)[static_cast<size_t>(purpose)];
  const int64_t bytes = shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype));
  const int64_t have = buf.defined() ? static_cast<int64_t>(buf.nbytes()) : 0;
  if (have < bytes) {
    // Host buffers grow geometrically so slowly growing requests do not reallocate every time.
    // Device buffers take exactly what is asked: the memory plan charges a GPU the largest
    // request (the prefill's rows), not half as much again.
    const int64_t grown = device.is_cpu() ? std::max<int64_t>(bytes, have * 3 / 2) : bytes;
    buf = Tensor();  // the old buffer goes first, so the two are never held together
    buf = empty({(grown + 3) / 4}, DType::F32, device);
  }
  return Tensor::wrap(buf.raw(), std::move(shape), dtype, device, buf.holder());
}

uint64_t scratch_bytes_held(Device device) {
  uint64_t n = 0;
  for (const Tensor& buf : buffers_of(device)) n += buf.defined() ? buf.nbytes() : 0;
  return n;
}

void release_scratch(Device device) {
  for (Tensor& buf : buffers_of(device)) buf = Tensor();
}

Tensor scratch_copy(Scratch purpose, const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor out = scratch(purpose, t.shape(), t.dtype(), device).as_packed(t.packed());
  copy(t, out);
  return out;
}

}  // namespace h2oflex::ops
