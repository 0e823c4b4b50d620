// The block-format table against the `gguf` package (tests/fixtures/gguf/blocks.json, written by
// tools/gen_gguf_fixtures.py): unpack gives gguf.quants.dequantize's values bit for bit on random
// blocks of every readable type, pack gives gguf.quants.quantize's bytes (ggml's reference
// quantizer), and packing unpacked blocks gives the same blocks back.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/block_format.h"
#include "tests/support/gguf_block_fixture.h"

namespace h2oflex {
namespace {

using testing_support::floats_from_hex;
using testing_support::from_hex;
const nlohmann::json& fixture() {
  return testing_support::gguf_block_fixture();
}

std::vector<uint32_t> bits(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * 4);
  return out;
}

TEST(BlockFormat, UnpackEqualsGgufDequantizeBitForBit) {
  const auto& unpack = fixture()["unpack"];
  ASSERT_EQ(unpack.size(), 7u);
  for (const auto& [name, entry] : unpack.items()) {
    const BlockFormat* f = block_format_by_name(name);
    ASSERT_NE(f, nullptr) << name;
    ASSERT_NE(f->unpack, nullptr) << name;
    const std::vector<uint8_t> blocks = from_hex(entry["blocks"]);
    const std::vector<float> want = floats_from_hex(entry["values"]);
    ASSERT_EQ(blocks.size() % f->block_bytes, 0u) << name;
    const size_t n = blocks.size() / f->block_bytes;
    ASSERT_EQ(want.size(), n * f->block_values) << name;
    std::vector<float> got(want.size());
    f->unpack(blocks.data(), got.data(), n);
    EXPECT_EQ(bits(got), bits(want)) << name;
  }
}

TEST(BlockFormat, PackEqualsGgufQuantizeAndRoundTrips) {
  const auto& pack = fixture()["pack"];
  ASSERT_EQ(pack.size(), 5u);
  for (const auto& [name, entry] : pack.items()) {
    const BlockFormat* f = block_format_by_name(name);
    ASSERT_NE(f, nullptr) << name;
    ASSERT_NE(f->pack, nullptr) << name;
    const std::vector<float> values = floats_from_hex(entry["values"]);
    const std::vector<uint8_t> want = from_hex(entry["blocks"]);
    const size_t n = values.size() / f->block_values;
    ASSERT_EQ(want.size(), n * f->block_bytes) << name;
    std::vector<uint8_t> got(want.size());
    f->pack(values.data(), got.data(), n);
    EXPECT_EQ(got, want) << name << ": pack differs from gguf.quants.quantize";
    // pack(unpack(x)) == x: blocks as a quantizer writes them survive a round trip.
    std::vector<float> unpacked(values.size());
    f->unpack(want.data(), unpacked.data(), n);
    std::vector<uint8_t> again(want.size());
    f->pack(unpacked.data(), again.data(), n);
    EXPECT_EQ(again, want) << name << ": pack(unpack(blocks)) changed the blocks";
  }
}

TEST(BlockFormat, EveryGgmlTypeHasItsSizesAndOnlyTheReadOnesUnpack) {
  // Sizes from ggml's type traits (gguf.GGML_QUANT_SIZES): a wrong row would mis-size a tensor.
  const std::vector<std::tuple<std::string, uint32_t, uint32_t, uint32_t>> want = {
      {"F32", 0, 1, 4},       {"F16", 1, 1, 2},       {"Q4_0", 2, 32, 18},
      {"Q4_1", 3, 32, 20},    {"Q8_0", 8, 32, 34},    {"Q4_K", 12, 256, 144},
      {"Q5_K", 13, 256, 176}, {"Q6_K", 14, 256, 210}, {"IQ4_XS", 23, 256, 136},
      {"BF16", 30, 1, 2},     {"TQ2_0", 35, 256, 66}, {"MXFP4", 39, 32, 17}};
  for (const auto& [name, id, values, bytes] : want) {
    const BlockFormat* f = block_format_by_ggml_type(id);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->name, name);
    EXPECT_EQ(f->block_values, values) << name;
    EXPECT_EQ(f->block_bytes, bytes) << name;
  }
  EXPECT_EQ(block_format_by_ggml_type(4), nullptr);  // removed from ggml (Q4_2)
  EXPECT_EQ(block_format_by_ggml_type(999), nullptr);
  EXPECT_EQ(readable_block_format_list(), "F32, F16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K, BF16");
}

}  // namespace
}  // namespace h2oflex
