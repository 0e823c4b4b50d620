// Whether this machine can run a suite row: its GPU, its free disk (less what an existing offload
// layout already holds) and its RAM against the cost model's estimate.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "policy/cost_model.h"
#include "policy/hardware.h"
#include "policy/run_policy.h"

namespace h2oflex {

// Bytes of an offload layout that a run of the row config `config` would reuse under disk_path
// (empty: the disk tier's default), 0 when there is none. The engine counts only what a layout
// lacks as new (WeightStream::check_disk_room), and so must the suite's check. With
// compute_dtype auto the matrix type is chosen by measuring when the run starts: the largest of
// the model's layouts counts (should the run need another, the engine refuses before writing).
uint64_t reusable_layout_bytes(const YAML::Node& config, const std::string& disk_path,
                               bool compress);

// Why this machine cannot run a row ("" if it can), from the profile and the estimate, where
// `reusable_disk` bytes of the estimate's disk are already there (reusable_layout_bytes).
std::string machine_skip_reason(const policy::HardwareProfile& hw,
                                const policy::CostEstimate* estimate,
                                const policy::HardwareLimits& limits, uint64_t reusable_disk);

}  // namespace h2oflex
