#include "experiments/generate/job_record.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/common/output_paths.h"
#include "runtime/core/error.h"

namespace h2oflex::generate {

namespace {

// The key that marks a file as ours, with the record's format version.
constexpr const char* kMarker = "h2oflex_generate_job";
constexpr int kVersion = 1;

}  // namespace

std::string job_record_path_for(const std::string& output_path) {
  return beside_output(output_path, ".job.json");
}

std::optional<nlohmann::ordered_json> read_job_record(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  H2OFLEX_INPUT_CHECK(std::filesystem::is_regular_file(path, ec), "job record '", path,
                      "' exists and is not a regular file; choose another --output");
  std::ifstream in(path, std::ios::binary);
  H2OFLEX_INPUT_CHECK(in.good(), "cannot read the job record '", path, "': ", std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json j =
      nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  const bool ours = j.is_object() && j.contains(kMarker) && j[kMarker].is_number_integer();
  H2OFLEX_INPUT_CHECK(ours, "'", path,
                      "' is not a generate job record; refusing to overwrite a file this job did "
                      "not write (choose another --output)");
  H2OFLEX_INPUT_CHECK(j[kMarker].get<int>() == kVersion, "job record '", path, "' has format ",
                      j[kMarker].get<int>(), "; this build reads format ", kVersion);
  j.erase(kMarker);
  return j;
}

void check_same_job(const nlohmann::ordered_json& recorded, const nlohmann::ordered_json& current,
                    const std::string& record_path, const std::string& output_path) {
  for (const auto& [key, value] : current.items()) {
    const bool same = recorded.contains(key) && recorded[key] == value;
    H2OFLEX_INPUT_CHECK(same, "'", output_path, "' holds results of a job that started with ", key,
                        " ", recorded.contains(key) ? recorded[key].dump() : "(not recorded)", " (",
                        record_path, "); this run has ", key, " ", value.dump(),
                        ". Resuming would mix both: run with the job's settings, or choose "
                        "another --output");
  }
}

void write_job_record(const std::string& path, const nlohmann::ordered_json& settings) {
  nlohmann::ordered_json j;
  j[kMarker] = kVersion;
  for (const auto& [key, value] : settings.items()) j[key] = value;
  write_file_atomically(path, j.dump(2) + "\n");
}

}  // namespace h2oflex::generate
