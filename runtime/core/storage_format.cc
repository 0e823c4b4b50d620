#include "runtime/core/storage_format.h"

#include <array>
#include <cctype>

#include "runtime/core/block_format.h"
#include "runtime/core/error.h"
#include "runtime/core/quant4.h"

namespace h2oflex {

namespace {

uint64_t q4_g64_row_bytes(int64_t n) {
  return static_cast<uint64_t>(quant4::row_bytes(n));
}

// A GGUF row's bytes from the block table (one truth for the block sizes).
template <const char* kGgml>
uint64_t gguf_row_bytes(int64_t n) {
  const BlockFormat* b = block_format_by_name(kGgml);
  return static_cast<uint64_t>(n) / b->block_values * b->block_bytes;
}

constexpr char kQ8_0[] = "Q8_0", kQ4_0[] = "Q4_0", kQ4_1[] = "Q4_1", kQ4_K[] = "Q4_K",
               kQ6_K[] = "Q6_K";

constexpr std::array kRows = {
    PackedFormatRow{PackedFormat::Q4G64, "q4_g64", "", quant4::kGroup, true, true,
                    q4_g64_row_bytes},
    PackedFormatRow{PackedFormat::Q8_0, "q8_0", kQ8_0, 32, true, true, gguf_row_bytes<kQ8_0>},
    PackedFormatRow{PackedFormat::Q4_0, "q4_0", kQ4_0, 32, true, false, gguf_row_bytes<kQ4_0>},
    PackedFormatRow{PackedFormat::Q4_1, "q4_1", kQ4_1, 32, true, false, gguf_row_bytes<kQ4_1>},
    PackedFormatRow{PackedFormat::Q4_K, "q4_k", kQ4_K, 256, false, false, gguf_row_bytes<kQ4_K>},
    PackedFormatRow{PackedFormat::Q6_K, "q6_k", kQ6_K, 256, false, false, gguf_row_bytes<kQ6_K>},
};

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::span<const PackedFormatRow> packed_format_rows() {
  return kRows;
}

const PackedFormatRow& packed_format_row(PackedFormat f) {
  for (const PackedFormatRow& r : kRows) {
    if (r.id == f) return r;
  }
  throw InternalError("storage format: no row for a plain format");
}

const PackedFormatRow* packed_format_by_name(std::string_view name) {
  for (const PackedFormatRow& r : kRows) {
    if (same_name(r.name, name)) return &r;
  }
  return nullptr;
}

std::optional<DType> plain_format_by_name(std::string_view name) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

const PackedFormatRow* packed_format_by_ggml_name(std::string_view ggml_name) {
  for (const PackedFormatRow& r : kRows) {
    if (!r.ggml_name.empty() && r.ggml_name == ggml_name) return &r;
  }
  return nullptr;
}

bool row_fits(PackedFormat f, int64_t n) {
  if (f == PackedFormat::None || f == PackedFormat::Q4G64) return n >= 0;
  return n >= 0 && n % packed_format_row(f).block_values == 0;
}

std::string packed_format_list(bool (*keep)(const PackedFormatRow&)) {
  std::string out;
  for (const PackedFormatRow& r : kRows) {
    if (keep && !keep(r)) continue;
    out += (out.empty() ? "" : ", ") + std::string(r.name);
  }
  return out;
}

uint64_t StorageFormat::bytes(uint64_t numel, uint64_t row) const {
  if (!is_packed()) return numel * dtype_size(dtype);
  H2OFLEX_CHECK(row > 0 && numel % row == 0, "storage format: ", numel,
                " elements are not whole rows of ", row);
  H2OFLEX_CHECK(row_fits(packed, static_cast<int64_t>(row)), "storage format ", name(),
                ": a row of ", row, " values is not whole blocks of ",
                packed_format_row(packed).block_values);
  return numel / row * packed_format_row(packed).row_bytes(static_cast<int64_t>(row));
}

uint64_t tensor_bytes(const StorageFormat& f, const std::vector<int64_t>& shape) {
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  const uint64_t row = shape.empty() ? 1 : static_cast<uint64_t>(shape.back());
  return row == 0 ? 0 : f.bytes(numel, row);
}

std::vector<int64_t> stored_shape(const StorageFormat& f, const std::vector<int64_t>& shape) {
  if (!f.is_packed()) return shape;
  const int64_t n = shape.empty() ? 1 : shape.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return {rows, static_cast<int64_t>(f.row_bytes(n))};
}

std::string StorageFormat::name() const {
  const std::string base(dtype_name(dtype));
  if (!is_packed()) return base;
  return std::string(packed_format_row(packed).name) + " (" + base + ")";
}

std::string WeightFormat::name() const {
  switch (mode) {
    case Mode::Stored:
      return "stored";
    case Mode::Plain:
      return "plain";
    case Mode::Dtype:
      return std::string(dtype_name(dtype));
    case Mode::Packed:
      break;
  }
  return std::string(packed_format_row(packed).name);
}

}  // namespace h2oflex
