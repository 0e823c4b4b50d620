// Runs the h2oflex executable with arguments, as a user would from a shell, and captures what it
// printed (stdout and stderr together) and its exit code — for the tests of the command line.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "experiments/common/child_process.h"

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

// `args` split into words as a POSIX shell splits them — at unquoted whitespace, with '…' taken
// literally, "…" with \" and \\ escapes, and \ escaping one character outside quotes — but no
// shell runs: nothing is expanded or executed.
inline std::vector<std::string> split_words(const std::string& args) {
  std::vector<std::string> words;
  std::string w;
  bool in_word = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const char c = args[i];
    if (c == '\'') {
      const size_t end = args.find('\'', i + 1);
      w += args.substr(i + 1, (end == std::string::npos ? args.size() : end) - i - 1);
      i = end == std::string::npos ? args.size() : end;
      in_word = true;
    } else if (c == '"') {
      for (++i; i < args.size() && args[i] != '"'; ++i) {
        if (args[i] == '\\' && i + 1 < args.size() && (args[i + 1] == '"' || args[i + 1] == '\\'))
          ++i;
        w += args[i];
      }
      in_word = true;
    } else if (c == '\\' && i + 1 < args.size()) {
      w += args[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(w));
      w.clear();
      in_word = false;
    } else {
      w += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(w));
  return words;
}

inline Outcome run_h2oflex(const std::string& args) {
  return run_h2oflex(split_words(args));
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
  std::vector<std::string> argv{H2OFLEX_BINARY};
  for (std::string& w : split_words(args)) argv.push_back(std::move(w));
  ChildResult r = run_child(argv, ChildOutput::Collect, err_file);
  std::string err;
  if (FILE* f = std::fopen(err_file.c_str(), "rb")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) err.append(buf, n);
    std::fclose(f);
  }
  return {r.exit_code, std::move(r.output), std::move(err)};
}

}  // namespace h2oflex::testing_support
