// dtype conversion on read, checked against bit patterns worked out from the IEEE formats, and
// across the reader's staging-buffer boundaries.
#include <cmath>
#include <cstring>
#include <vector>

#include "models/loaders/safetensors.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

using testing::as_bytes;
using testing::write_safetensors;

class SafetensorsConvert : public testing::ScratchDirTest {};

// 1, -2.5, 65504 (largest f16), 2^-24 (smallest f16 subnormal), 0.333251953125 (f16 0x3555).
const std::vector<float> kValues = {1.0f, -2.5f, 65504.0f, 0x1p-24f, 0.333251953125f};
const std::vector<uint16_t> kF16Bits = {0x3c00, 0xc100, 0x7bff, 0x0001, 0x3555};
// bf16 of the same values, rounded to nearest even: 65504 -> 65536, 0.3332.. -> 0.333984375.
const std::vector<uint16_t> kBf16Bits = {0x3f80, 0xc020, 0x4780, 0x3380, 0x3eab};

TEST_F(SafetensorsConvert, EveryPairOfFloatFormats) {
  const fs::path file = dir() / "formats.safetensors";
  write_safetensors(file, {{"f32", "F32", {5}, as_bytes(kValues)},
                           {"f16", "F16", {5}, as_bytes(kF16Bits)},
                           {"bf16", "BF16", {5}, as_bytes(kBf16Bits)}});
  const auto r = SafetensorsReader::open(file);

  std::vector<float> f(5);
  r.read(r.get("f32"), DType::F32, f.data());
  EXPECT_EQ(f, kValues);
  r.read(r.get("f16"), DType::F32, f.data());
  EXPECT_EQ(f, kValues);  // every value is exact in f16
  r.read(r.get("bf16"), DType::F32, f.data());
  EXPECT_EQ(f, (std::vector<float>{1.0f, -2.5f, 65536.0f, 0x1p-24f, 0.333984375f}));

  std::vector<uint16_t> h(5);
  r.read(r.get("f32"), DType::F16, h.data());
  EXPECT_EQ(h, kF16Bits);
  r.read(r.get("f32"), DType::BF16, h.data());
  EXPECT_EQ(h, kBf16Bits);
  r.read(r.get("f16"), DType::BF16, h.data());
  EXPECT_EQ(h, kBf16Bits);
  r.read(r.get("f16"), DType::F16, h.data());
  EXPECT_EQ(h, kF16Bits);
  // bf16 -> f16: 65536 overflows f16 to +inf; 0.333984375 is exact in f16 (0x3558).
  r.read(r.get("bf16"), DType::F16, h.data());
  EXPECT_EQ(h, (std::vector<uint16_t>{0x3c00, 0xc100, 0x7c00, 0x0001, 0x3558}));
}

// Tensors larger than the staging buffer convert correctly across chunk boundaries.
TEST_F(SafetensorsConvert, LargeTensorsAcrossStagingChunks) {
  constexpr size_t n16 = 3'000'001;  // 6 MB of f16
  constexpr size_t n32 = 1'500'007;  // 6 MB of f32
  // f16 bits of the integers 0..2047, built from the format: exponent e + 15, 10-bit mantissa.
  auto f16_of_int = [](uint32_t v) -> uint16_t {
    if (v == 0) return 0;
    int e = 31 - __builtin_clz(v);
    return static_cast<uint16_t>(((e + 15) << 10) | ((v - (1u << e)) << (10 - e)));
  };
  std::vector<uint16_t> h(n16);
  for (size_t i = 0; i < n16; ++i) h[i] = f16_of_int(static_cast<uint32_t>(i % 2048));
  std::vector<float> f(n32);
  for (size_t i = 0; i < n32; ++i) f[i] = static_cast<float>(i % 2048) - 1024.0f;
  const fs::path file = dir() / "large.safetensors";
  write_safetensors(file, {{"h", "F16", {static_cast<int64_t>(n16)}, as_bytes(h)},
                           {"f", "F32", {static_cast<int64_t>(n32)}, as_bytes(f)}});
  const auto r = SafetensorsReader::open(file);

  std::vector<float> out(n16);
  r.read(r.get("h"), DType::F32, out.data());
  size_t bad = 0;
  for (size_t i = 0; i < n16; ++i) bad += out[i] != static_cast<float>(i % 2048);
  EXPECT_EQ(bad, 0u);

  std::vector<uint16_t> out16(n32);
  r.read(r.get("f"), DType::F16, out16.data());
  bad = 0;
  for (size_t i = 0; i < n32; ++i) {
    const int v = static_cast<int>(i % 2048) - 1024;
    const uint16_t want = v < 0 ? static_cast<uint16_t>(0x8000 | f16_of_int(-v))
                                : f16_of_int(static_cast<uint32_t>(v));
    bad += out16[i] != want;
  }
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace h2oflex
