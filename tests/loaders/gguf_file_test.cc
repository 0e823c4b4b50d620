// The GGUF reader on files written byte by byte: a valid one read back (metadata of every kind,
// tensor data through the block table), and malformed ones, each refused with InputError naming
// the file, the key or tensor and the byte offset.
#include <cmath>
#include <string>
#include <vector>

#include "models/gguf/gguf_file.h"
#include "runtime/core/error.h"
#include "tests/loaders/gguf_test_support.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;
using testing::GgufBytes;

constexpr uint32_t kF32 = 0, kQ8_0 = 8, kQ5_K = 13;

// The message GgufFile::open throws for `bytes`, or "" when it opens.
std::string open_error(const fs::path& file, const GgufBytes& bytes) {
  bytes.write(file);
  try {
    (void)GgufFile::open(file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

class GgufFileTest : public testing::ScratchDirTest {
 protected:
  fs::path file() { return dir() / "m.gguf"; }
  std::string q(const std::string& rest) {
    return detail::concat("'", file().string(), "': ", rest);
  }
};

TEST_F(GgufFileTest, ReadsMetadataOfEveryKindAndTensorData) {
  GgufBytes b;
  b.header(3, 2, 4).kv_string("general.architecture", "llama").kv_u32("general.alignment", 64);
  b.str("a.floats").u32(9).u32(6).u64(2);  // array of f32
  float f[2] = {0.5f, -2.0f};
  b.raw(f, 8);
  b.str("a.nested").u32(9).u32(9).u64(1).u32(5).u64(2).u32(7).u32(uint32_t(-3));  // [[7, -3]]
  b.tensor("w", {32, 2}, kF32, 0).tensor("q", {32}, kQ8_0, 256);
  b.align(64);
  std::vector<float> w(64);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i) - 3.5f;
  b.raw(w.data(), 256);
  uint16_t d = 0x3800;  // f16 0.5
  b.raw(&d, 2);
  for (int j = 0; j < 32; ++j) {
    const int8_t v = int8_t(j - 16);
    b.raw(&v, 1);
  }
  b.write(file());

  const GgufFile g = GgufFile::open(file());
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.string("general.architecture"), "llama");
  EXPECT_EQ(g.uint("general.alignment"), 64u);
  const auto& floats = std::get<std::vector<GgufValue>>(g.find("a.floats")->value);
  ASSERT_EQ(floats.size(), 2u);
  EXPECT_EQ(std::get<double>(floats[1].value), -2.0);
  const auto& nested = std::get<std::vector<GgufValue>>(g.find("a.nested")->value);
  ASSERT_EQ(nested.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(std::get<std::vector<GgufValue>>(nested[0].value)[1].value), -3);
  ASSERT_EQ(g.tensors().size(), 2u);
  const GgufTensorInfo& t = g.tensors()[0];
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(t.offset % 64, 0u);
  std::vector<float> got(64);
  g.read_f32(t, got.data());
  EXPECT_EQ(got, w);
  std::vector<float> qv(32);
  g.read_f32(*g.find_tensor("q"), qv.data());
  for (int j = 0; j < 32; ++j) EXPECT_EQ(qv[j], 0.5f * float(j - 16));
  EXPECT_THROW(g.string("a.floats"), InputError);
  EXPECT_THROW(g.uint("missing.key"), InputError);
}

TEST_F(GgufFileTest, TruncatedInsideATensorInfoNamesTheTensorAndOffset) {
  GgufBytes b;
  b.header(3, 1, 0).str("w").u32(4).u64(32).u64(2).u64(2);  // the fourth dim missing
  EXPECT_EQ(open_error(file(), b),
            q("tensor 'w' (info at byte offset 24): a dim at byte offset 61 needs 8 bytes, but "
              "the file ends at byte 61 (truncated or corrupt)"));
}

TEST_F(GgufFileTest, StringLengthPastTheEndNamesTheEntryAndOffset) {
  GgufBytes b;
  b.header(3, 0, 1).u64(1000).bytes += "general";
  EXPECT_EQ(open_error(file(), b),
            q("metadata entry 0: its key at byte offset 24 has length 1000, past the end of the "
              "file (7 bytes left)"));
}

TEST_F(GgufFileTest, ArrayLengthPastTheEndIsRefusedBeforeAllocating) {
  GgufBytes b;
  b.header(3, 0, 1).str("tokens").u32(9).u32(8).u64(uint64_t(1) << 60);
  EXPECT_EQ(open_error(file(), b),
            q("metadata key 'tokens' (at byte offset 24): the array length 1152921504606846976 "
              "at byte offset 46 needs at least 8 bytes each, past the end of the file (0 bytes "
              "left)"));
}

// A count the file could hold but no model's metadata needs: refused before it takes gigabytes
// of RAM as parsed values.
TEST_F(GgufFileTest, MoreMetadataValuesThanAModelNeedsAreRefused) {
  GgufBytes b;
  const uint64_t n = (uint64_t{1} << 22) + 1;
  b.header(3, 0, 1).str("a").u32(9).u32(0).u64(n).zeros(n);  // an array of u8 from byte 49
  // The array is value 1, element k value k + 2: element 2^22 - 1 is one too many.
  EXPECT_EQ(open_error(file(), b),
            q("metadata key 'a' (at byte offset 24): more than 4194304 metadata values (at byte "
              "offset 4194352); not a model's metadata"));
}

TEST_F(GgufFileTest, TensorDataPastTheEndNamesTheTensor) {
  GgufBytes b;
  b.header(3, 1, 0).tensor("w", {32}, kF32, 64).align(32).zeros(128);
  EXPECT_EQ(open_error(file(), b),
            q("tensor 'w' (info at byte offset 24): its data (128 bytes at byte offset 128) runs "
              "past the end of the file (192 bytes)"));
}

TEST_F(GgufFileTest, MisalignedOffsetNamesTheTensorAndAlignment) {
  GgufBytes b;
  b.header(3, 1, 0).tensor("w", {32}, kF32, 4).align(32).zeros(256);
  EXPECT_EQ(open_error(file(), b),
            q("tensor 'w' (info at byte offset 24): data offset 4 (at byte offset 49) is not a "
              "multiple of the alignment 32"));
}

TEST_F(GgufFileTest, OverlappingTensorsAreRefused) {
  GgufBytes b;
  b.header(3, 2, 0).tensor("a", {64}, kF32, 0).tensor("b", {32}, kF32, 128).align(32).zeros(512);
  EXPECT_EQ(open_error(file(), b),
            q("tensor 'b' (data at byte offset 224) overlaps tensor 'a' (256 bytes at byte "
              "offset 96)"));
}

TEST_F(GgufFileTest, UnknownTypeIdNamesTheTensor) {
  GgufBytes b;
  b.header(3, 1, 0).tensor("w", {32}, 99, 0).align(32).zeros(256);
  EXPECT_EQ(open_error(file(), b),
            q("tensor 'w' (info at byte offset 24): type id 99 at byte offset 45 is not a ggml "
              "type"));
}

TEST_F(GgufFileTest, DimsWhoseProductOverflowsAreRefused) {
  GgufBytes b;
  b.header(3, 1, 0).tensor("w", {uint64_t(1) << 40, uint64_t(1) << 30}, kF32, 0);
  EXPECT_EQ(open_error(file(), b),
            q("tensor 'w' (info at byte offset 24): the dims' product overflows 63 bits"));
}

TEST_F(GgufFileTest, BadMagicVersionAndValueTypeAreRefused) {
  GgufBytes b;
  b.bytes = "GGML";
  b.u32(3).u64(0).u64(0);
  EXPECT_EQ(open_error(file(), b), q("not a GGUF file (the first 4 bytes are not 'GGUF')"));
  GgufBytes v1;
  v1.header(1, 0, 0);
  EXPECT_EQ(open_error(file(), v1),
            q("GGUF version 1 at byte offset 4; versions 2 and 3 are read"));
  GgufBytes t;
  t.header(3, 0, 1).str("k").u32(13).u32(0);
  EXPECT_EQ(open_error(file(), t),
            q("metadata key 'k' (at byte offset 24): value type 13 is not one GGUF defines (0 to "
              "12)"));
}

TEST_F(GgufFileTest, AlignmentMustBeAPowerOfTwo) {
  GgufBytes b;
  b.header(3, 0, 1).kv_u32("general.alignment", 48);
  EXPECT_EQ(open_error(file(), b),
            q("metadata key 'general.alignment' (at byte offset 53, a u32) is 48; it must be a "
              "power of two"));
}

TEST_F(GgufFileTest, TypesTheTableCannotUnpackAreRefusedByName) {
  GgufBytes b;
  b.header(3, 1, 0).tensor("blk.0.ffn_down.weight", {256}, kQ5_K, 0).align(32).zeros(176);
  b.write(file());
  const GgufFile g = GgufFile::open(file());
  std::vector<float> out(256);
  try {
    g.read_f32(g.tensors()[0], out.data());
    FAIL() << "a Q5_K tensor was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              q("tensor 'blk.0.ffn_down.weight' has type Q5_K, which h2oflex does not read (it "
                "reads F32, F16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K, BF16)"));
  }
}

}  // namespace
}  // namespace h2oflex
