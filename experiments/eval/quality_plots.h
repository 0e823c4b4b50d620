// The plots of a quality suite's results, drawn by matplotlib scripts written beside
// results.json (so a plot can be redrawn by hand): quality.png (each task's metric against the
// budget, per policy) and, when the suite asks, groups.png (a choice task's accuracy by group).
#pragma once

#include <filesystem>
#include <string>

#include "experiments/eval/quality_suite.h"

namespace h2oflex::eval {

// The files the plots take in --out.
inline constexpr const char* kPlotPy = "quality_plot.py";
inline constexpr const char* kPlotPng = "quality.png";
inline constexpr const char* kGroupPlotPy = "groups_plot.py";
inline constexpr const char* kGroupPlotPng = "groups.png";

// Writes the scripts and their plots into `out` from `json_path` (results.json); a plot that
// cannot be drawn is reported on stderr. Returns the drawn plots' names as ",quality.png..." for
// the command's summary line.
std::string write_quality_plots(const QualitySuite& suite, const std::filesystem::path& out,
                                const std::string& json_path);

}  // namespace h2oflex::eval
