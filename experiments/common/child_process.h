// Running another program (fio for bench-io, peers and plots for suites, h2oflex in the tests)
// from an argument vector: no shell ever reads a path, so a quote, a space or a `;` in a folder
// name is just part of the name.
#pragma once

#include <string>
#include <vector>

namespace h2oflex {

struct ChildResult {
  int exit_code = -1;  // the program's exit status; -1 when a signal ended it or it never started
  std::string output;  // stdout and stderr together (empty unless collected)
};

enum class ChildOutput { Collect, Discard };

// Runs `argv[0]` (looked up on PATH when it holds no '/') with `argv`, stdin from /dev/null,
// and waits for it. A program that cannot be started gives exit_code -1 and the reason in
// `output`; nothing is thrown. With `stderr_file`, the child's stderr is written to that file
// (created or truncated) and `output` collects its stdout alone.
ChildResult run_child(const std::vector<std::string>& argv,
                      ChildOutput output = ChildOutput::Collect,
                      const std::string& stderr_file = "");

}  // namespace h2oflex
