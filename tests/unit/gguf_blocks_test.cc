// The per-block decoders and packers the CUDA kernels are built from (runtime/cuda/gguf_blocks.h),
// compiled here for the host: every value equals the `gguf` package's dequantization
// (tests/fixtures/gguf/blocks.json) and the CPU's unpack (runtime/core/block_format.cc) bit for
// bit, and every packed block equals ggml's reference quantizer and the CPU's pack byte for
// byte. The device build differs only in its f16 conversions and explicitly rounded arithmetic
// (the header's comment); tests/gpu/packed_rows_gpu_test.cc compares the kernels on a GPU.
#include "runtime/cuda/gguf_blocks.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/block_format.h"
#include "runtime/core/half.h"
#include "runtime/core/rng.h"
#include "tests/support/gguf_block_fixture.h"
#include "tests/support/random_blocks.h"

namespace h2oflex {
namespace {

using gguf_blocks::Block;

constexpr std::array kReadable = {PackedFormat::Q8_0, PackedFormat::Q4_0, PackedFormat::Q4_1,
                                  PackedFormat::Q4_K, PackedFormat::Q6_K};
constexpr std::array kPackable = {PackedFormat::Q8_0, PackedFormat::Q4_0, PackedFormat::Q4_1};

const BlockFormat& cpu_row(PackedFormat f) {
  const BlockFormat* b = block_format_by_name(packed_format_row(f).ggml_name);
  EXPECT_NE(b, nullptr) << packed_format_row(f).name;
  return *b;
}

template <PackedFormat F>
using Tag = std::integral_constant<PackedFormat, F>;

// Calls fn(Tag<F>{}) for F = f.
template <typename Fn>
void with_format(PackedFormat f, Fn&& fn) {
  switch (f) {
    case PackedFormat::Q8_0:
      return fn(Tag<PackedFormat::Q8_0>{});
    case PackedFormat::Q4_0:
      return fn(Tag<PackedFormat::Q4_0>{});
    case PackedFormat::Q4_1:
      return fn(Tag<PackedFormat::Q4_1>{});
    case PackedFormat::Q4_K:
      return fn(Tag<PackedFormat::Q4_K>{});
    case PackedFormat::Q6_K:
      return fn(Tag<PackedFormat::Q6_K>{});
    default:
      FAIL() << "not a GGUF block format";
  }
}

// Calls fn(Block<F>{}) for f's block type.
template <typename Fn>
void with_block(PackedFormat f, Fn&& fn) {
  with_format(f, [&](auto format) { fn(Block<decltype(format)::value>{}); });
}

// `blocks` blocks of f decoded value by value through the header, indexed as the kernels index
// packed rows (row_value over the whole buffer).
std::vector<float> decode(PackedFormat f, const std::vector<uint8_t>& bytes, size_t blocks) {
  std::vector<float> out(blocks * packed_format_row(f).block_values);
  with_format(f, [&](auto format) {
    for (uint64_t t = 0; t < out.size(); ++t) {
      out[t] = gguf_blocks::row_value<decltype(format)::value>(bytes.data(), t);
    }
  });
  return out;
}

std::vector<uint8_t> encode(PackedFormat f, const std::vector<float>& values) {
  std::vector<uint8_t> out;
  with_block(f, [&](auto b) {
    using B = decltype(b);
    if constexpr (requires(const float* x, uint8_t* o) { B::pack(x, o); }) {
      const size_t blocks = values.size() / B::kValues;
      out.resize(blocks * B::kBytes);
      for (size_t i = 0; i < blocks; ++i)
        B::pack(values.data() + i * B::kValues, &out[i * B::kBytes]);
    }
  });
  return out;
}

std::vector<uint32_t> bits(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * 4);
  return out;
}

using testing_support::floats_from_hex;
using testing_support::from_hex;
const nlohmann::json& fixture() {
  return testing_support::gguf_block_fixture();
}

TEST(GgufBlocks, SizesAreTheBlockTablesRows) {
  for (PackedFormat f : kReadable) {
    with_block(f, [&](auto b) {
      using B = decltype(b);
      EXPECT_EQ(static_cast<uint32_t>(B::kValues), cpu_row(f).block_values);
      EXPECT_EQ(static_cast<uint32_t>(B::kBytes), cpu_row(f).block_bytes);
      EXPECT_EQ(B::kValues, packed_format_row(f).block_values);
    });
  }
}

TEST(GgufBlocks, DecodeEqualsGgufDequantizeBitForBit) {
  int checked = 0;
  for (const auto& [name, entry] : fixture()["unpack"].items()) {
    const BlockFormat* row = block_format_by_name(name);
    ASSERT_NE(row, nullptr) << name;
    const PackedFormatRow* format = packed_format_by_ggml_name(name);
    if (format == nullptr) continue;  // F32, F16, BF16: plain
    const std::vector<uint8_t> blocks = from_hex(entry["blocks"]);
    const std::vector<float> want = floats_from_hex(entry["values"]);
    EXPECT_EQ(bits(decode(format->id, blocks, blocks.size() / row->block_bytes)), bits(want))
        << name;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(kReadable.size()));
}

TEST(GgufBlocks, DecodeEqualsTheCpuUnpackOnRandomBlocks) {
  constexpr size_t kBlocks = 512;
  for (PackedFormat f : kReadable) {
    const std::vector<uint8_t> blocks = random_blocks(f, kBlocks, 5 + static_cast<uint64_t>(f));
    std::vector<float> want(kBlocks * cpu_row(f).block_values);
    cpu_row(f).unpack(blocks.data(), want.data(), kBlocks);
    EXPECT_EQ(bits(decode(f, blocks, kBlocks)), bits(want)) << packed_format_row(f).name;
  }
}

TEST(GgufBlocks, PackEqualsGgufQuantizeByteForByte) {
  int checked = 0;
  for (const auto& [name, entry] : fixture()["pack"].items()) {
    const PackedFormatRow* format = packed_format_by_ggml_name(name);
    if (format == nullptr) continue;
    EXPECT_EQ(encode(format->id, floats_from_hex(entry["values"])), from_hex(entry["blocks"]))
        << name;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(kPackable.size()));
}

TEST(GgufBlocks, PackEqualsTheCpuPackOnRandomAndEdgeBlocks) {
  constexpr size_t kBlocks = 64;
  std::vector<float> x(kBlocks * 32);
  fill_normal(x.data(), x.size(), 31, 0, 0, 0.0f, 1.0f);
  for (size_t j = 0; j < 32; ++j) {
    x[j] = 0.0f;                                         // block 0: zeros (d = 0)
    x[32 + j] = 0.375f;                                  // block 1: constant
    x[64 + j] = j == 7 ? -1e4f : 1e-3f;                  // block 2: one outlier
    x[96 + j] = static_cast<float>(j) - 15.5f;           // block 3: halves, codes on ties
    x[128 + j] = j == 0 ? 127.0f : float(j % 9) + 0.5f;  // block 4: q8_0 codes on .5 ties
    x[160 + j] = j % 2 == 0 ? 1e-8f : -1e-8f;            // block 5: an f16-subnormal scale
  }
  for (PackedFormat f : kPackable) {
    std::vector<uint8_t> want(kBlocks * cpu_row(f).block_bytes);
    cpu_row(f).pack(x.data(), want.data(), kBlocks);
    EXPECT_EQ(encode(f, x), want) << packed_format_row(f).name;
  }
}

}  // namespace
}  // namespace h2oflex
