#include "models/loaders/hf_checkpoint.h"

#include <string>

#include "models/loaders/hf_json.h"
#include "runtime/core/error.h"

namespace h2oflex {

HfCheckpoint HfCheckpoint::open(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    throw InputError(detail::concat("'", dir.string(), "': model directory not found"));
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InputError(detail::concat("'", dir.string(), "': model path is not a directory"));
  }
  read_json_object(dir / "config.json");  // present and a JSON object, before the weights
  return HfCheckpoint(dir, SafetensorsReader::open(dir));
}

const TensorInfo* HfCheckpoint::find(std::string_view name) const {
  if (const TensorInfo* info = weights_.find(name)) return info;
  return weights_.find("model." + std::string(name));
}

const TensorInfo& HfCheckpoint::get(std::string_view name) const {
  const TensorInfo* info = find(name);
  if (info == nullptr) {
    throw InputError(detail::concat("'", dir_.string(), "': tensor '", name,
                                    "' (with or without the 'model.' prefix) not found in ",
                                    weights_.source().filename().string()));
  }
  return *info;
}

const TensorInfo& HfCheckpoint::get(std::string_view name, const Shape& expected) const {
  const TensorInfo& info = get(name);
  check_tensor_shape(info, expected);
  return info;
}

}  // namespace h2oflex
