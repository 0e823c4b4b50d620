// Shared helpers for the gpu tests: skipping without a device, random host tensors, and
// normalized error between a CUDA result and its CPU twin.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/core/rng.h"
#include "runtime/core/tensor.h"

#ifdef H2OFLEX_WITH_CUDA
#include "runtime/cuda/device.h"
#include "runtime/cuda/device_memory.h"

// Skips the current test (with the reason) when no CUDA device can be used.
#define H2OFLEX_REQUIRE_CUDA_DEVICE()                                                   \
  do {                                                                                  \
    if (!::h2oflex::cuda::cuda_device_available()) {                                    \
      GTEST_SKIP() << "no CUDA device: " << ::h2oflex::cuda::cuda_unavailable_reason(); \
    }                                                                                   \
  } while (0)
#endif

namespace h2oflex::gpu_test {

// Host tensor of normal(0, std) values from stream `stream`, stored as `dtype`.
inline Tensor random_tensor(Shape shape, DType dtype, uint64_t stream, float std = 1.0f) {
  Tensor f = Tensor::empty(std::move(shape), DType::F32);
  fill_normal(f.data<float>(), static_cast<uint64_t>(f.numel()), 20240601, stream, 0, 0.0f, std);
  return dtype == DType::F32 ? f : to_dtype(f, dtype);
}

// ‖a − b‖₂ / max(‖b‖₂, tiny) over f32 host tensors of equal size.
inline double normalized_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  double diff = 0, ref = 0;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    const double d = static_cast<double>(pa[i]) - pb[i];
    diff += d * d;
    ref += static_cast<double>(pb[i]) * pb[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-30);
}

// Error bound of a result computed with `dtype` arithmetic or storage.
inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 1e-5;
    case DType::F16:
      return 5e-3;
    case DType::BF16:
      return 2e-2;
    case DType::I32:
    case DType::U8:
      break;
  }
  return 0;
}

inline std::string dtype_label(DType d) {
  return std::string(dtype_name(d));
}

}  // namespace h2oflex::gpu_test
