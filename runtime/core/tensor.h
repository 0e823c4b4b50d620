// Tensor: a typed, shaped, contiguous view of bytes that someone owns.
//
// A Tensor either owns its storage (allocated 64-byte aligned on the host) or views memory owned
// by something else (a tier arena, an mmap'd staging buffer, a device allocation). Views share
// ownership through `holder_`, so a view keeps its parent alive. Tensors are always row-major
// contiguous; slicing along the first dimension yields a contiguous view.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/device.h"
#include "runtime/core/dtype.h"
#include "runtime/core/error.h"
#include "runtime/core/storage_format.h"

namespace h2oflex {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // Owning, zero-initialized host tensor.
  static Tensor zeros(Shape shape, DType dtype);
  // Owning, uninitialized host tensor.
  static Tensor empty(Shape shape, DType dtype);
  // Non-owning view of external memory; `holder` (may be null) keeps it alive.
  static Tensor wrap(void* data, Shape shape, DType dtype, Device device = Device::CPU,
                     std::shared_ptr<void> holder = nullptr);

  bool defined() const { return data_ != nullptr || numel() == 0; }
  DType dtype() const { return dtype_; }
  // A packed tensor (u8 [rows, row bytes]) says its format here; None for every other tensor.
  // Ops dispatch on it (runtime/core/storage_format.h); slices and reshapes keep it.
  PackedFormat packed() const { return packed_; }
  // The same bytes marked as rows packed in `f` (u8, rank 2).
  Tensor as_packed(PackedFormat f) const;
  // The full device, index included (cuda:1 is not cuda:0).
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i < 0 ? shape_.size() + i : i); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return data_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }
  template <typename T>
  std::span<T> span() const {
    return {static_cast<T*>(data_), static_cast<size_t>(numel())};
  }

  // Rows [begin, end) of the first dimension, sharing storage.
  Tensor slice(int64_t begin, int64_t end) const;
  // Same bytes, new shape (element count must match).
  Tensor reshape(Shape shape) const;
  // Owning deep copy on the host.
  Tensor clone() const;

  const std::shared_ptr<void>& holder() const { return holder_; }

 private:
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::F32;
  PackedFormat packed_ = PackedFormat::None;
  Device device_ = Device::CPU;
  std::shared_ptr<void> holder_;
};

// Converts a host tensor to `dtype` (f32/f16/bf16 among themselves), returning a new tensor.
Tensor to_dtype(const Tensor& t, DType dtype);

}  // namespace h2oflex
