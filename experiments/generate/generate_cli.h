// The `generate` subcommand's flags, kept beside the command they configure.
#pragma once

#include <CLI/CLI.hpp>

#include "experiments/generate/generate_command.h"

namespace h2oflex {

// Adds `generate` to `app`, parsing into `options` (which must outlive parsing). Returns the
// subcommand: when it was parsed(), call run_generate(options).
CLI::App* add_generate_subcommand(CLI::App& app, GenerateJobOptions& options);

}  // namespace h2oflex
