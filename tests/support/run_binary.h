// Runs the h2oflex executable with arguments, as a user would from a shell, and captures what it
// printed (stdout and stderr together) and its exit code — for the tests of the command line.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace h2oflex::testing_support {

struct Outcome {
  int exit_code;  // -1 when the process did not exit normally
  std::string output;
};

inline Outcome run_h2oflex(const std::string& args) {
  const std::string cmd = std::string(H2OFLEX_BINARY) + " " + args + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::string out;
  if (pipe == nullptr) return {-1, "popen failed: " + cmd};
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace h2oflex::testing_support
