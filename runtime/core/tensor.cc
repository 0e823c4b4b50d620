#include "runtime/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "runtime/core/half.h"

namespace h2oflex {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

namespace {
std::shared_ptr<void> aligned_host_alloc(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Tensor Tensor::empty(Shape shape, DType dtype) {
  Tensor t;
  t.shape_ = std::move(shape);
  for (int64_t d : t.shape_) H2OFLEX_CHECK(d >= 0, "negative dimension in ", shape_str(t.shape_));
  t.dtype_ = dtype;
  t.holder_ = aligned_host_alloc(t.nbytes());
  t.data_ = t.holder_.get();
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype) {
  Tensor t = empty(std::move(shape), dtype);
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(void* data, Shape shape, DType dtype, Device device,
                    std::shared_ptr<void> holder) {
  Tensor t;
  t.data_ = data;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.holder_ = std::move(holder);
  return t;
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  H2OFLEX_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0], "slice [", begin,
                ", ", end, ") of ", shape_str(shape_));
  Tensor t = *this;
  t.shape_[0] = end - begin;
  const size_t row_bytes = shape_[0] == 0 ? 0 : nbytes() / static_cast<size_t>(shape_[0]);
  t.data_ = static_cast<char*>(data_) + static_cast<size_t>(begin) * row_bytes;
  return t;
}

Tensor Tensor::reshape(Shape shape) const {
  H2OFLEX_CHECK(shape_numel(shape) == numel(), "reshape ", shape_str(shape_), " to ",
                shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::as_packed(PackedFormat f) const {
  H2OFLEX_CHECK(f == PackedFormat::None || (dtype_ == DType::U8 && rank() == 2),
                "a packed tensor is u8 [rows, row bytes], not ", dtype_name(dtype_), " ",
                shape_str(shape_));
  Tensor t = *this;
  t.packed_ = f;
  return t;
}

Tensor Tensor::clone() const {
  H2OFLEX_CHECK(device_.is_cpu(), "clone of a device tensor");
  Tensor t = empty(shape_, dtype_);
  t.packed_ = packed_;
  std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor to_dtype(const Tensor& t, DType dtype) {
  H2OFLEX_CHECK(t.device().is_cpu(), "to_dtype on a device tensor");
  if (t.dtype() == dtype) return t.clone();
  const size_t n = static_cast<size_t>(t.numel());
  Tensor f32 = t.dtype() == DType::F32 ? t : Tensor::empty(t.shape(), DType::F32);
  if (t.dtype() == DType::BF16)
    convert_bf16_to_f32(t.data<uint16_t>(), f32.data<float>(), n);
  else if (t.dtype() == DType::F16)
    convert_f16_to_f32(t.data<uint16_t>(), f32.data<float>(), n);
  else
    H2OFLEX_CHECK(t.dtype() == DType::F32, "to_dtype from ", dtype_name(t.dtype()));
  if (dtype == DType::F32) return f32.raw() == t.raw() ? t.clone() : f32;
  Tensor out = Tensor::empty(t.shape(), dtype);
  if (dtype == DType::BF16)
    convert_f32_to_bf16(f32.data<float>(), out.data<uint16_t>(), n);
  else if (dtype == DType::F16)
    convert_f32_to_f16(f32.data<float>(), out.data<uint16_t>(), n);
  else
    H2OFLEX_CHECK(false, "to_dtype to ", dtype_name(dtype));
  return out;
}

}  // namespace h2oflex
