#include "experiments/generate/job_input.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "runtime/core/error.h"

namespace h2oflex::generate {

namespace {

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

JobInput read_job_input(const std::string& path) {
  H2OFLEX_INPUT_CHECK(!std::filesystem::is_directory(path), "input '", path, "' is a directory");
  std::ifstream in(path, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "cannot read input file '", path, "': ", std::strerror(errno));
  JobInput job;
  struct FirstSeen {
    int64_t line;
    bool numeric;
  };
  std::unordered_map<std::string, FirstSeen> first_seen;  // id -> where it was first seen
  std::string text;
  while (std::getline(in, text)) {
    ++job.lines;
    if (job.lines == 1 && text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // UTF-8 BOM
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (is_blank(text)) continue;
    ParsedLine parsed = parse_request_line(text, job.lines);
    if (parsed.error) {
      job.errors.push_back(std::move(*parsed.error));
      continue;
    }
    GenerateRequest& r = *parsed.request;
    auto [it, inserted] = first_seen.emplace(r.id, FirstSeen{r.line, r.numeric_id});
    if (!inserted) {
      // An integer id becomes its digits, so 42 and "42" collide: say so, or it looks wrong.
      const std::string same = it->second.numeric == r.numeric_id
                                   ? ""
                                   : detail::concat("; the integer ", r.id, " and the string \"",
                                                    r.id, "\" are the same id");
      job.errors.push_back(LineError{
          r.line, r.id,
          detail::concat("duplicate id (first seen on line ", it->second.line, ")", same)});
      continue;
    }
    job.requests.push_back(std::move(r));
  }
  H2OFLEX_INPUT_CHECK(in.eof(), "reading input file '", path, "' failed after line ", job.lines);
  return job;
}

}  // namespace h2oflex::generate
