// A suite's results as the files `experiment` writes: table.csv, table.md, results.json.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "experiments/suite/result_row.h"

namespace h2oflex {

// A throughput as the tables show it: `digits` + 1 significant digits; "" for none.
std::string short_number(double v, int digits = 3);
std::string short_number(const std::optional<double>& v);

std::string results_csv(const std::vector<ResultRow>& rows);
std::string results_markdown(const Suite& suite, const std::vector<ResultRow>& rows,
                             bool predict_only);
nlohmann::json results_json(const Suite& suite, const std::vector<ResultRow>& rows,
                            bool predict_only);
}  // namespace h2oflex
