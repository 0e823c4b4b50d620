#include "runtime/core/storage_format.h"

#include "runtime/core/error.h"

namespace h2oflex {

namespace {

// Each packed group keeps its minimum and scale as fp16.
constexpr uint64_t kGroupMetadataBytes = 2 * 2;

}  // namespace

void validate_storage_format(const StorageFormat& f) {
  if (!f.packed()) return;
  H2OFLEX_INPUT_CHECK(f.bits == 2 || f.bits == 4 || f.bits == 8, "storage format: ", f.bits,
                      " bits per element is not supported (2, 4 or 8)");
  H2OFLEX_INPUT_CHECK(f.group_size >= 1, "storage format: group size ", f.group_size,
                      " must be >= 1");
}

uint64_t StorageFormat::bytes(uint64_t numel, uint64_t row) const {
  if (!packed()) return numel * dtype_size(dtype);
  validate_storage_format(*this);
  H2OFLEX_CHECK(row > 0 && numel % row == 0, "storage format: ", numel,
                " elements are not whole rows of ", row);
  const uint64_t g = static_cast<uint64_t>(group_size);
  const uint64_t groups_per_row = (row + g - 1) / g;
  const uint64_t data_per_row = (row * static_cast<uint64_t>(bits) + 7) / 8;
  return numel / row * (data_per_row + groups_per_row * kGroupMetadataBytes);
}

uint64_t tensor_bytes(const StorageFormat& f, const std::vector<int64_t>& shape) {
  uint64_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<uint64_t>(d);
  const uint64_t row = shape.empty() ? 1 : static_cast<uint64_t>(shape.back());
  return row == 0 ? 0 : f.bytes(numel, row);
}

std::string StorageFormat::name() const {
  const std::string base(dtype_name(dtype));
  if (!packed()) return base;
  return "int" + std::to_string(bits) + "/g" + std::to_string(group_size) + " (" + base + ")";
}

}  // namespace h2oflex
