#include "experiments/eval/quality_tables.h"

#include <cstdio>
#include <optional>
#include <sstream>

namespace h2oflex::eval {

std::string fixed_decimals(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

QualityTables quality_tables(const QualitySuite& suite, const nlohmann::ordered_json& cells,
                             const std::vector<std::string>& engines) {
  // The full cache (a row without budget) is what the others are compared with.
  auto full_of = [&](const std::string& task, const char* key) -> std::optional<double> {
    for (const auto& c : cells) {
      if (c["task"] == task && c["budget"].is_null() && c.contains(key) &&
          c["variant"] == suite.variants.front().label) {
        return c[key].get<double>();
      }
    }
    return std::nullopt;
  };
  std::ostringstream md, csv;
  md << "# " << suite.name << "\n\n"
     << suite.description << "\n\nModel: `" << suite.model << "`; engine: ";
  for (size_t v = 0; v < engines.size(); ++v) md << (v ? "; " : "") << engines[v];
  md << ". Budget = the KV slots kept per (layer, head) "
     << "as a fraction of the scored sequence. Perplexity: lower is better (in brackets: the "
        "ratio to the full cache); acc / acc_norm: higher is better.\n\n| policy | budget |";
  csv << "policy,budget,task,kv,perplexity,ratio_to_full,acc,acc_norm\n";
  for (const QualityTask& t : suite.tasks) md << " " << t.name << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < suite.tasks.size(); ++i) md << "---|";
  md << "\n";
  for (size_t i = 0; i < cells.size(); i += suite.tasks.size()) {
    const auto& first = cells[i];
    md << "| " << first["policy"].get<std::string>() << " | "
       << (first["budget"].is_null() ? std::string("—")
                                     : fixed_decimals(100 * first["budget"].get<double>(), 0) + "%")
       << " |";
    for (size_t t = 0; t < suite.tasks.size(); ++t) {
      const auto& c = cells[i + t];
      std::string cell;
      std::string ratio, ppl, acc, acc_norm;
      if (c.contains("skipped")) {
        cell = "n/a";
      } else if (c.contains("perplexity")) {
        const double v = c["perplexity"].get<double>();
        ppl = fixed_decimals(v, 4);
        cell = fixed_decimals(v, 2);
        if (const auto full = full_of(c["task"], "perplexity")) {
          ratio = fixed_decimals(v / *full, 4);
          cell += " (" + fixed_decimals(v / *full, 3) + "×)";
        }
      } else {
        acc = fixed_decimals(c["acc"].get<double>(), 4);
        acc_norm = fixed_decimals(c["acc_norm"].get<double>(), 4);
        cell = fixed_decimals(c["acc"].get<double>(), 3) + " / " +
               fixed_decimals(c["acc_norm"].get<double>(), 3);
      }
      md << " " << cell << " |";
      csv << c["policy"].get<std::string>() << ","
          << (c["budget"].is_null() ? "" : fixed_decimals(c["budget"].get<double>(), 2)) << ","
          << c["task"].get<std::string>() << "," << c["kv"].get<std::string>() << "," << ppl << ","
          << ratio << "," << acc << "," << acc_norm << "\n";
    }
    md << "\n";
  }
  // Per-group accuracy of each choice task that has groups: one table per task.
  for (size_t t = 0; t < suite.tasks.size(); ++t) {
    std::vector<std::string> groups;
    for (const auto& c : cells) {
      if (c["task"] == suite.tasks[t].name && c.contains("groups")) {
        for (const auto& g : c["groups"].items()) groups.push_back(g.key());
        break;
      }
    }
    if (groups.empty()) continue;
    md << "\n## " << suite.tasks[t].name << ": acc by group\n\n| policy | budget |";
    for (const std::string& g : groups) md << " " << g << " |";
    md << "\n|---|---|";
    for (size_t i = 0; i < groups.size(); ++i) md << "---|";
    md << "\n";
    for (const auto& c : cells) {
      if (c["task"] != suite.tasks[t].name) continue;
      md << "| " << c["policy"].get<std::string>() << " | "
         << (c["budget"].is_null() ? std::string("—")
                                   : fixed_decimals(100 * c["budget"].get<double>(), 0) + "%")
         << " |";
      for (const std::string& g : groups) {
        md << " "
           << (c.contains("groups") && c["groups"].contains(g)
                   ? fixed_decimals(c["groups"][g]["acc"].get<double>(), 2)
                   : std::string("n/a"))
           << " |";
      }
      md << "\n";
    }
  }
  return {md.str(), csv.str()};
}

}  // namespace h2oflex::eval
