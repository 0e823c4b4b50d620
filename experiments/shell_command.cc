#include "experiments/shell_command.h"

#include <cstdio>

#include "runtime/core/error.h"

namespace h2oflex {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

CommandResult run_shell_command(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw IoError("cannot start: " + command);
  CommandResult r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  r.status = ::pclose(pipe);
  return r;
}

}  // namespace h2oflex
