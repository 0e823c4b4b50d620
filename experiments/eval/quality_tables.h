// A quality suite's cells as tables: table.md (a row per policy and budget, a column per task;
// then each grouped choice task's accuracy by group) and table.csv (a row per cell).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/eval/quality_suite.h"

namespace h2oflex::eval {

struct QualityTables {
  std::string md, csv;
};

// `cells` in the suite's order: for each variant, policy and budget, one cell per task.
QualityTables quality_tables(const QualitySuite& suite, const nlohmann::ordered_json& cells,
                             const std::vector<std::string>& engines);

// `v` with `digits` decimals, as the tables and the progress lines show it.
std::string fixed_decimals(double v, int digits = 3);

}  // namespace h2oflex::eval
