#include "experiments/suite/capped_run.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "experiments/suite/memory_cap.h"
#include "experiments/suite/peer_run.h"
#include "runtime/core/byte_size.h"

namespace h2oflex {

namespace {

namespace fs = std::filesystem;

// `h2oflex run CONFIG --json OUT` of this very executable, in `cap`.
MeasuredRow run_h2oflex_child(const SuiteRow& row, const YAML::Node& run_config, MemoryCap& cap) {
  const std::string stem =
      "h2oflex-capped-" + std::to_string(::getpid()) + "-" + std::to_string(row.index);
  const fs::path config = fs::temp_directory_path() / (stem + ".yaml");
  const fs::path out = fs::temp_directory_path() / (stem + ".json");
  struct Remove {
    std::vector<fs::path> paths;
    ~Remove() {
      std::error_code ec;
      for (const fs::path& p : paths) fs::remove(p, ec);
    }
  } remove{{config, out}};
  {
    YAML::Emitter e;
    e << run_config;
    std::ofstream(config) << e.c_str() << "\n";
  }
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) {
    MeasuredRow m;
    m.skip_reason = "cannot find this executable (/proc/self/exe): " + ec.message();
    return m;
  }
  const ChildResult r = cap.run({self, "run", config.string(), "--json", out.string()});
  return measured_from_child(r, out.string(), "h2oflex run", self + " run");
}

}  // namespace

MeasuredRow run_capped_row(const SuiteRow& row, const YAML::Node& run_config) {
  std::string why_not;
  std::unique_ptr<MemoryCap> cap = MemoryCap::create(*row.memory_cap, &why_not);
  if (!cap) {
    MeasuredRow m;
    m.skip_reason = "memory_cap " + format_bytes(static_cast<double>(*row.memory_cap)) +
                    ": no memory cgroup: " + why_not;
    return m;
  }
  const std::string not_dropped = drop_page_cache();
  MeasuredRow m = row.peer ? run_peer(row, cap.get()) : run_h2oflex_child(row, run_config, *cap);
  if (!m.skip_reason.empty()) {
    // A child the cgroup's OOM killer ended shows as a signal: say how close to the cap it got.
    m.skip_reason += " (memory cgroup peak " +
                     format_bytes(static_cast<double>(cap->peak_bytes())) + " of " +
                     format_bytes(static_cast<double>(cap->bytes())) + ")";
    return m;
  }
  m.details["memory_cap"] = {{"bytes", cap->bytes()},
                             {"peak_bytes", cap->peak_bytes()},
                             {"cgroup", cap->path()},
                             {"page_cache", not_dropped.empty() ? "dropped" : not_dropped}};
  if (!not_dropped.empty()) m.note = not_dropped;
  return m;
}

}  // namespace h2oflex
