// OUT.errors.jsonl: one line per bad input line ({"line", "id"?, "error"}), rewritten by every
// run of the job so it always describes the current input.
#pragma once

#include <string>
#include <vector>

#include "experiments/generate/request_line.h"

namespace h2oflex::generate {

std::string errors_path_for(const std::string& output_path);  // OUT.errors.jsonl

// Writes the errors sorted by line (or removes a stale file when there are none) and fsyncs.
void write_error_report(const std::string& path, std::vector<LineError> errors);

}  // namespace h2oflex::generate
