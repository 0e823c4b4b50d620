// Runs the h2oflex executable with arguments, as a user would from a shell, and captures what it
// printed (stdout and stderr together) and its exit code — for the tests of the command line.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "experiments/child_process.h"

namespace h2oflex::testing_support {

struct Outcome {
  int exit_code;  // -1 when the process did not exit normally
  std::string output;
};

// Each argument as it is, quotes, spaces and all (no shell reads them).
inline Outcome run_h2oflex(const std::vector<std::string>& args) {
  std::vector<std::string> argv{H2OFLEX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildResult r = run_child(argv);
  return {r.exit_code, std::move(r.output)};
}

// `args` split at whitespace: for arguments without spaces.
inline Outcome run_h2oflex(const std::string& args) {
  std::istringstream in(args);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return run_h2oflex(words);
}

}  // namespace h2oflex::testing_support
