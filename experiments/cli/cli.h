// The h2oflex command line: subcommands run, bench, bench-io, experiment, plan, profile,
// generate, convert.
#pragma once

namespace h2oflex {

// Returns the process exit code: 0 success, 2 bad input, 1 other failure.
int cli_main(int argc, char** argv);

}  // namespace h2oflex
