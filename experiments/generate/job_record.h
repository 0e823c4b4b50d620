// OUT.job.json: the settings that decide a generate job's results (model, device, compute type,
// block size, grouping, sampling defaults, KV policy), written when the job starts and checked
// by every later run. A resumed job skips what is already in OUT, so a run with other settings
// would silently mix two kinds of results; and `compute_dtype: auto` is measured on each start
// and can come out differently (a near tie, a loaded machine), so the type the job started with
// is the one every resume uses.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace h2oflex::generate {

std::string job_record_path_for(const std::string& output_path);  // OUT.job.json

// The record at `path`, or nullopt when there is none. Throws InputError when the file exists
// and is not a job record this command wrote (it is never overwritten then).
std::optional<nlohmann::ordered_json> read_job_record(const std::string& path);

// Checks that a resumed job keeps the settings it started with: throws InputError naming the
// first setting whose value differs, both values, the record and the output.
void check_same_job(const nlohmann::ordered_json& recorded, const nlohmann::ordered_json& current,
                    const std::string& record_path, const std::string& output_path);

// Writes `settings` (the keys and values above) as the record, atomically.
void write_job_record(const std::string& path, const nlohmann::ordered_json& settings);

}  // namespace h2oflex::generate
