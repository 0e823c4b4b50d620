// The plot beside a suite's results: a matplotlib script written next to results.json (so the
// plot can be redrawn by hand) and run with python3.
#pragma once

#include <string>

namespace h2oflex {

// The script's name in --out.
inline constexpr const char* kSuitePlotPy = "plot.py";

// Writes a PNG with python3 + matplotlib; returns "" or why no plot was made.
std::string write_plot(const std::string& results_json_path, const std::string& png_path);
// The same with another matplotlib script (`script` is its text, written beside the results as
// `script_name` so the plot can be redrawn by hand).
std::string write_plot_with(const char* script, const std::string& script_name,
                            const std::string& results_json_path, const std::string& png_path);

}  // namespace h2oflex
