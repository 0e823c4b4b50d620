// Malformed, truncated and missing checkpoints, each written for real into a scratch directory:
// every one must raise InputError (IoError when the file shrinks after opening) whose message
// names the file and, where there is one, the tensor.
#include <string>
#include <vector>

#include "models/loaders/hf_checkpoint.h"
#include "models/loaders/safetensors.h"
#include "runtime/core/error.h"
#include "tests/loaders/loaders_test_support.h"

namespace h2oflex {
namespace {

namespace fs = std::filesystem;

using testing::as_bytes;
using testing::RawTensor;
using testing::write_raw_safetensors;
using testing::write_safetensors;

class SafetensorsErrors : public testing::ScratchDirTest {
 protected:
  // A valid file with two small F32 tensors ("a" [2,3] then "b" [4]).
  fs::path valid_file(const std::string& name) {
    const fs::path file = dir() / name;
    write_safetensors(file, {{"a", "F32", {2, 3}, as_bytes(std::vector<float>{1, 2, 3, 4, 5, 6})},
                             {"b", "F32", {4}, as_bytes(std::vector<float>{7, 8, 9, 10})}});
    return file;
  }
  std::string header_with(const std::string& entry) {
    return "{\"__metadata__\":{\"format\":\"pt\"}," + entry + "}";
  }
};

TEST_F(SafetensorsErrors, ValidFileOpensAndReads) {
  const auto r = SafetensorsReader::open(valid_file("ok.safetensors"));
  ASSERT_EQ(r.tensors().size(), 2u);
  EXPECT_EQ(r.tensors()[0].name, "a");  // file order
  std::vector<float> b(4);
  r.read(r.get("b"), DType::F32, b.data());
  EXPECT_EQ(b, (std::vector<float>{7, 8, 9, 10}));
}

TEST_F(SafetensorsErrors, MissingFile) {
  EXPECT_THROW_WITH(SafetensorsReader::open(dir() / "absent.safetensors"), InputError,
                    "absent.safetensors");
}

TEST_F(SafetensorsErrors, DirectoryWithoutWeights) {
  fs::create_directories(dir() / "empty_model");
  EXPECT_THROW_WITH(SafetensorsReader::open(dir() / "empty_model"), InputError, "empty_model");
}

TEST_F(SafetensorsErrors, FileShorterThanHeaderLength) {
  const fs::path file = dir() / "tiny.safetensors";
  std::ofstream(file, std::ios::binary) << "abc";
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "tiny.safetensors");
}

TEST_F(SafetensorsErrors, HeaderLengthBeyondFile) {
  const fs::path file = dir() / "longheader.safetensors";
  std::string bytes(8, '\0');
  bytes[0] = static_cast<char>(0xe8);  // 1000, little-endian
  bytes[1] = 0x03;
  bytes += "{\"a\":1}   ";
  std::ofstream(file, std::ios::binary) << bytes;
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "longheader.safetensors");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "header length 1000");
}

TEST_F(SafetensorsErrors, MalformedHeaderJson) {
  const fs::path file = dir() / "badjson.safetensors";
  write_raw_safetensors(file, "{\"a\": {\"dtype\": \"F32\", ", std::vector<unsigned char>(16));
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "badjson.safetensors");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "malformed");
}

// Overlapping data_offsets: two tensors reading the same bytes (issue 14, defect 2).
TEST_F(SafetensorsErrors, OverlappingDataOffsetsAreRefused) {
  const fs::path file = dir() / "overlap.safetensors";
  write_raw_safetensors(file,
                        header_with("\"a\": {\"dtype\": \"F32\", \"shape\": [4], "
                                    "\"data_offsets\": [0, 16]}, "
                                    "\"b\": {\"dtype\": \"F32\", \"shape\": [2], "
                                    "\"data_offsets\": [8, 16]}"),
                        std::vector<unsigned char>(16));
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "overlap");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "'a'");
  // Adjacent ranges and empty tensors are fine.
  write_raw_safetensors(file,
                        header_with("\"a\": {\"dtype\": \"F32\", \"shape\": [2], "
                                    "\"data_offsets\": [0, 8]}, "
                                    "\"e\": {\"dtype\": \"F32\", \"shape\": [0], "
                                    "\"data_offsets\": [4, 4]}, "
                                    "\"b\": {\"dtype\": \"F32\", \"shape\": [2], "
                                    "\"data_offsets\": [8, 16]}"),
                        std::vector<unsigned char>(16));
  EXPECT_EQ(SafetensorsReader::open(file).tensors().size(), 3u);
}

// A key twice in the header: the JSON library would keep one silently (issue 14, defect 2).
TEST_F(SafetensorsErrors, DuplicateHeaderKeyIsRefused) {
  const fs::path file = dir() / "dup.safetensors";
  const std::string entry = "\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}";
  write_raw_safetensors(file, header_with(entry + ", " + entry), std::vector<unsigned char>(8));
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "the key 'a' twice");
  const std::string inner =
      "\"a\": {\"dtype\": \"F32\", \"dtype\": \"F16\", \"shape\": [2], "
      "\"data_offsets\": [0, 8]}";
  write_raw_safetensors(file, header_with(inner), std::vector<unsigned char>(8));
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "the key 'dtype' twice");
}

TEST_F(SafetensorsErrors, HeaderNotAnObject) {
  const fs::path file = dir() / "array.safetensors";
  write_raw_safetensors(file, "[1, 2, 3]", {});
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "array.safetensors");
}

TEST_F(SafetensorsErrors, TruncatedFileShorterThanItsHeaderSays) {
  const fs::path file = valid_file("truncated.safetensors");
  fs::resize_file(file, fs::file_size(file) - 4);  // cuts the last element of "b"
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "truncated.safetensors");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "tensor 'b'");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "shorter than its header says");
}

TEST_F(SafetensorsErrors, FileShrinksAfterOpening) {
  const fs::path file = valid_file("shrinks.safetensors");
  const auto r = SafetensorsReader::open(file);
  fs::resize_file(file, fs::file_size(file) - 8);
  std::vector<float> b(4);
  EXPECT_THROW_WITH(r.read(r.get("b"), DType::F32, b.data()), IoError, "shrinks.safetensors");
}

TEST_F(SafetensorsErrors, TensorNotFound) {
  const auto r = SafetensorsReader::open(valid_file("named.safetensors"));
  EXPECT_EQ(r.find("nope"), nullptr);
  EXPECT_THROW_WITH(r.get("nope"), InputError, "named.safetensors");
  EXPECT_THROW_WITH(r.get("nope"), InputError, "'nope'");
}

TEST_F(SafetensorsErrors, ByteSizeInconsistentWithShape) {
  const fs::path file = dir() / "wrongsize.safetensors";
  write_raw_safetensors(
      file, header_with("\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}"),
      std::vector<unsigned char>(24));
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "wrongsize.safetensors");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "tensor 'w'");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "needs 24");
}

TEST_F(SafetensorsErrors, UnsupportedDtype) {
  const fs::path file = dir() / "int64.safetensors";
  write_safetensors(file, {{"ids", "I64", {2}, std::vector<unsigned char>(16)}});
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "int64.safetensors");
  EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "'I64'");
}

TEST_F(SafetensorsErrors, MalformedEntries) {
  const std::vector<std::string> entries = {
      "\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}",
      "\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}",
      "\"t\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}",
      "\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}",
      "\"t\":{\"shape\":[1],\"data_offsets\":[0,4]}",
      "\"t\":[1,2]",
  };
  for (size_t i = 0; i < entries.size(); ++i) {
    SCOPED_TRACE(entries[i]);
    const fs::path file = dir() / ("entry" + std::to_string(i) + ".safetensors");
    write_raw_safetensors(file, header_with(entries[i]), std::vector<unsigned char>(8));
    EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, file.filename().string());
    EXPECT_THROW_WITH(SafetensorsReader::open(file), InputError, "tensor 't'");
  }
}

class ShardedErrors : public SafetensorsErrors {
 protected:
  void SetUp() override {
    SafetensorsErrors::SetUp();
    write_safetensors(dir() / "s1.safetensors",
                      {{"x", "F32", {2}, as_bytes(std::vector<float>{1, 2})}});
    write_safetensors(dir() / "s2.safetensors",
                      {{"y", "BF16", {2}, as_bytes(std::vector<uint16_t>{0x3f80, 0xc000})}});
  }
  void write_index(const std::string& text) {
    std::ofstream(dir() / SafetensorsReader::kIndexName) << text;
  }
};

TEST_F(ShardedErrors, ValidIndexOpens) {
  write_index(R"({"metadata": {}, "weight_map": {"x": "s1.safetensors", "y": "s2.safetensors"}})");
  const auto r = SafetensorsReader::open(dir());
  EXPECT_EQ(r.files().size(), 2u);
  std::vector<float> y(2);
  r.read(r.get("y"), DType::F32, y.data());
  EXPECT_EQ(y, (std::vector<float>{1.0f, -2.0f}));
}

TEST_F(ShardedErrors, MissingShard) {
  write_index(R"({"weight_map": {"x": "s1.safetensors", "z": "s3.safetensors"}})");
  EXPECT_THROW_WITH(SafetensorsReader::open(dir()), InputError, "s3.safetensors");
}

TEST_F(ShardedErrors, TensorNotInItsShard) {
  write_index(R"({"weight_map": {"x": "s2.safetensors", "y": "s2.safetensors"}})");
  EXPECT_THROW_WITH(SafetensorsReader::open(dir()), InputError, "'x'");
}

TEST_F(ShardedErrors, MalformedIndex) {
  write_index(R"({"weight_map": {"x": "s1.safetensors",)");
  EXPECT_THROW_WITH(SafetensorsReader::open(dir()), InputError, SafetensorsReader::kIndexName);
  write_index(R"({"weight_map": {"x": "../s1.safetensors"}})");
  EXPECT_THROW_WITH(SafetensorsReader::open(dir()), InputError, "../s1.safetensors");
}

TEST_F(ShardedErrors, DuplicateTensorAcrossShards) {
  write_safetensors(dir() / "s3.safetensors",
                    {{"x", "F32", {2}, as_bytes(std::vector<float>{3, 4})}});
  write_index(R"({"weight_map": {"x": "s1.safetensors", "y": "s3.safetensors"}})");
  // s3 does not hold y, but the duplicate x is found first.
  EXPECT_THROW(SafetensorsReader::open(dir()), InputError);
}

TEST_F(SafetensorsErrors, HfCheckpointMissingPieces) {
  EXPECT_THROW_WITH(HfCheckpoint::open(dir() / "no_such_model"), InputError, "no_such_model");
  fs::create_directories(dir() / "weights_only");
  valid_file("weights_only/model.safetensors");
  EXPECT_THROW_WITH(HfCheckpoint::open(dir() / "weights_only"), InputError, "config.json");
}

}  // namespace
}  // namespace h2oflex
