// OUT.errors.jsonl: one line per bad input line ({"line", "id"?, "error"}), rewritten by every
// run of the job so it always describes the current input.
#pragma once

#include <string>
#include <vector>

#include "experiments/generate/request_line.h"

namespace h2oflex::generate {

std::string errors_path_for(const std::string& output_path);  // OUT.errors.jsonl

// Throws InputError when `path` exists and holds anything but an error report this command wrote:
// the report is rewritten on every run, which must not destroy someone else's file. `remedy`
// ends the message: what the user can change (the option that names the report).
void check_error_report_replaceable(const std::string& path,
                                    const std::string& remedy = "choose another --output");

// Writes the errors sorted by line (or removes a stale file when there are none) and fsyncs.
void write_error_report(const std::string& path, std::vector<LineError> errors);

}  // namespace h2oflex::generate
