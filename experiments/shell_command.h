// Running another program from the command line tools (fio for bench-io, peers for suites).
#pragma once

#include <string>

namespace h2oflex {

// `s` as one word of a POSIX shell command line.
std::string shell_quote(const std::string& s);

struct CommandResult {
  int status = 0;      // as pclose returns it; 0 = exited with 0
  std::string output;  // stdout and stderr together (the command should redirect 2>&1)
};

// Runs `command` with /bin/sh and collects its output; throws only when it cannot start.
CommandResult run_shell_command(const std::string& command);

}  // namespace h2oflex
