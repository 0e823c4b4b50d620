// Which device computes a run: `compute_device: auto | cpu | cuda` resolved against this build
// and this machine.
#pragma once

#include <string>

#include "engine/pipeline_device.h"

namespace h2oflex {

// True when this build has the CUDA backend and a device is usable; otherwise false and, if
// `reason` is given, why not.
bool cuda_compute_available(std::string* reason = nullptr);

// "auto" picks cuda when available, else cpu; "cuda" without a usable device throws InputError
// naming `key` and the reason; anything else but "cpu" throws InputError naming `key`.
// `planning_only`: nothing will run, so "cuda" needs no device (a GPU run's memory plan is made
// on any machine).
PipelineDevice resolve_compute_device(const std::string& choice, const std::string& key,
                                      bool planning_only = false);

}  // namespace h2oflex
