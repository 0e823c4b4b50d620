#include "experiments/generate/error_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "experiments/common/output_paths.h"
#include "runtime/core/error.h"
#include "runtime/core/temp_file_cleanup.h"

namespace h2oflex::generate {

std::string errors_path_for(const std::string& output_path) {
  return beside_output(output_path, ".errors.jsonl");
}

void check_error_report_replaceable(const std::string& path, const std::string& remedy) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  H2OFLEX_INPUT_CHECK(std::filesystem::is_regular_file(path, ec), "error report '", path,
                      "' exists and is not a regular file; ", remedy);
  std::ifstream in(path, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "cannot read the existing error report '", path,
                      "': ", std::strerror(errno));
  std::string text;
  for (int64_t n = 1; std::getline(in, text); ++n) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    const bool ours = j.is_object() && j.contains("line") && j["line"].is_number_integer() &&
                      j.contains("error") && j["error"].is_string() &&
                      j.size() == (j.contains("id") ? 3u : 2u);
    H2OFLEX_INPUT_CHECK(ours, "'", path, "' line ", n,
                        " is not an entry of an error report; refusing to overwrite a file this "
                        "command did not write (",
                        remedy, ")");
  }
}

void write_error_report(const std::string& path, std::vector<LineError> errors) {
  if (errors.empty()) {
    if (std::remove(path.c_str()) != 0 && errno != ENOENT) {
      throw IoError(detail::concat("removing stale '", path, "': ", std::strerror(errno)));
    }
    return;
  }
  std::stable_sort(errors.begin(), errors.end(),
                   [](const LineError& a, const LineError& b) { return a.line < b.line; });
  std::string text;
  for (const LineError& e : errors) {
    nlohmann::ordered_json j;
    j["line"] = e.line;
    if (!e.id.empty()) j["id"] = e.id;
    j["error"] = e.reason;
    text += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  // Written beside and renamed over, so a reader never sees half a report.
  const std::string tmp = temporary_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  H2OFLEX_INPUT_CHECK(fd >= 0, "cannot write '", tmp, "': ", std::strerror(errno));
  TempFile cleanup(tmp);  // removed on a failure below and on SIGINT / SIGTERM
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "no progress";
      ::close(fd);
      throw IoError(detail::concat("writing '", tmp, "' at offset ", done, ": ", why));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw IoError(detail::concat("saving '", path, "': ", std::strerror(errno)));
  }
  cleanup.keep();
}

}  // namespace h2oflex::generate
