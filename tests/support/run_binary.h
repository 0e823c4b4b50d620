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

// The same with stdout kept apart: `output` is what the command wrote to stdout, `errors` its
// stderr (through a file under `scratch`, an existing directory).
struct SplitOutcome {
  int exit_code;
  std::string output;
  std::string errors;
};

inline SplitOutcome run_h2oflex_split(const std::string& args, const std::string& scratch) {
  const std::string err_file = scratch + "/h2oflex.stderr";
  const std::string cmd = std::string(H2OFLEX_BINARY) + " " + args + " 2>" + err_file;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {-1, "", "popen failed: " + cmd};
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  std::string err;
  if (FILE* f = std::fopen(err_file.c_str(), "rb")) {
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) err.append(buf, n);
    std::fclose(f);
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err};
}

}  // namespace h2oflex::testing_support
