// Reads a generate job's input file: every valid request, and one LineError per bad line.
#pragma once

#include <string>
#include <vector>

#include "experiments/generate/request_line.h"

namespace h2oflex::generate {

struct JobInput {
  std::vector<GenerateRequest> requests;  // in file order, ids unique
  std::vector<LineError> errors;          // in file order
  int64_t lines = 0;                      // lines read, blank ones included
};

// Throws InputError when the file is missing or unreadable. Blank lines are skipped; a repeated
// id is an error on the later line (the first one is kept).
JobInput read_job_input(const std::string& path);

}  // namespace h2oflex::generate
