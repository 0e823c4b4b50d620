#include "experiments/suite/machine_fit.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "engine/compute_device.h"
#include "engine/model_footprint.h"
#include "engine/model_layout.h"
#include "engine/tier_set.h"
#include "experiments/common/model_source.h"
#include "experiments/common/run_config.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex {

namespace {

// -1 when the file system cannot be asked (the row is then not skipped for its disk).
double free_disk_bytes(const std::string& dir) {
  try {
    return static_cast<double>(free_bytes_at(dir));
  } catch (const InputError&) {
    return -1;
  }
}

double physical_ram_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * page : -1;
}

}  // namespace

uint64_t reusable_layout_bytes(const YAML::Node& config, const std::string& disk_path,
                               bool compress) {
  namespace fs = std::filesystem;
  std::vector<DType> types;
  ModelSource src;
  try {
    const RunConfig rc = parse_run_config(config, "suite row");
    if (auto ct = ops::parse_compute_dtype(rc.compute_dtype, "compute_dtype")) {
      types = {matrix_dtype_for(*ct)};
    } else {  // auto: chosen by measuring, when the run starts
      types = {DType::BF16, DType::F32, DType::F16};
    }
    src = open_model_source(rc.model, rc.dummy, rc.seed);
  } catch (const std::exception&) {
    return 0;  // the run itself reports what is wrong with the row
  }
  uint64_t largest = 0;
  for (DType t : types) {
    const fs::path data =
        fs::path(model_layout_dir(disk_path_or_default(disk_path), src.key, t, compress)) /
        WeightLayout::kDataFile;
    std::error_code ec;
    const uint64_t bytes = fs::exists(data, ec) ? fs::file_size(data, ec) : 0;
    if (!ec) largest = std::max(largest, bytes);
  }
  return largest;
}

std::string machine_skip_reason(const policy::HardwareProfile& hw, const policy::CostEstimate* e,
                                const policy::HardwareLimits& limits, uint64_t reusable_disk) {
  std::string no_gpu;
  if (hw.compute_device == policy::ComputeDevice::Gpu && !cuda_compute_available(&no_gpu)) {
    // Measured on the CPU, a GPU profile's row would be a CPU number under a GPU label.
    return "profile '" + hw.name + "' computes on a GPU; " + no_gpu;
  }
  if (!e) return "";
  const std::string disk_path = disk_path_or_default(limits.disk_path);
  const double free_disk = free_disk_bytes(disk_path);
  const double new_disk = e->peak.disk - static_cast<double>(reusable_disk);
  if (new_disk > 0 && free_disk >= 0 && new_disk > free_disk) {
    return "needs ~" + format_bytes(e->peak.disk) + " on disk (" + format_bytes(new_disk) +
           " new), " + format_bytes(free_disk) + " free at " + disk_path;
  }
  const double ram = physical_ram_bytes();
  const double in_ram =
      e->peak.host + (hw.compute_device == policy::ComputeDevice::Cpu ? e->peak.device : 0);
  if (ram > 0 && in_ram > 0.9 * ram) {
    return "needs ~" + format_bytes(in_ram) + " of RAM, this machine has " + format_bytes(ram);
  }
  return "";
}

}  // namespace h2oflex
