// A suite row with `memory_cap`: run as a child process inside a fresh memory cgroup of that
// limit, the page cache dropped first. A peer row runs its script there; an h2oflex row runs this
// executable's `run` command on the row's config, so that both sides of a comparison are one
// process each under the same limit (an in-process run would cap the whole suite).
#pragma once

#include <yaml-cpp/yaml.h>

#include "experiments/suite/experiment_suite.h"
#include "experiments/suite/result_row.h"

namespace h2oflex {

// Skipped with the reason when no cgroup can be made. The result's details carry
// "memory_cap": {bytes, peak_bytes, cgroup, page_cache}; a page cache that could not be dropped
// is also said in its note.
MeasuredRow run_capped_row(const SuiteRow& row, const YAML::Node& run_config);

}  // namespace h2oflex
