// A GGUF byte writer for the reader's tests, written from the format's description (little-endian
// header, metadata, tensor infos, aligned data), independent of the reader under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace h2oflex::testing {

struct GgufBytes {
  std::string bytes;

  GgufBytes& u32(uint32_t v) { return raw(&v, 4); }
  GgufBytes& u64(uint64_t v) { return raw(&v, 8); }
  GgufBytes& str(const std::string& s) {
    u64(s.size());
    bytes += s;
    return *this;
  }
  GgufBytes& raw(const void* p, size_t n) {
    bytes.append(static_cast<const char*>(p), n);
    return *this;
  }
  // magic, version, counts
  GgufBytes& header(uint32_t version, uint64_t tensors, uint64_t kvs) {
    bytes += "GGUF";
    return u32(version).u64(tensors).u64(kvs);
  }
  GgufBytes& kv_string(const std::string& key, const std::string& value) {
    return str(key).u32(8).str(value);
  }
  GgufBytes& kv_u32(const std::string& key, uint32_t value) { return str(key).u32(4).u32(value); }
  GgufBytes& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                    uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  GgufBytes& align(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back('\0');
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    bytes.append(n, '\0');
    return *this;
  }
  size_t size() const { return bytes.size(); }

  void write(const std::filesystem::path& file) const {
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
};

inline std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void write_bytes(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace h2oflex::testing
