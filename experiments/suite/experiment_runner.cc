#include "experiments/suite/experiment_runner.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "engine/model_footprint.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/run_config.h"
#include "experiments/plan/plan_command.h"
#include "experiments/suite/capped_run.h"
#include "experiments/suite/peer_run.h"
#include "policy/kv_policy.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/error.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex {

namespace {

double element_bytes(const YAML::Node& config, const policy::HardwareProfile& hw) {
  if (hw.compute_device == policy::ComputeDevice::Gpu) return 2;  // fp16, as FlexGen
  const std::string dtype =
      config["compute_dtype"] ? config["compute_dtype"].as<std::string>() : "auto";
  return resolve_compute_type(dtype) == ops::ComputeType::F32 ? 4 : 2;
}

// The table's mention of a row's memory cap, e.g. "cap 2.00 GiB".
std::string cap_text(uint64_t bytes) {
  return "cap " + format_bytes(static_cast<double>(bytes));
}

}  // namespace

std::vector<ResultRow> evaluate_suite(const Suite& suite, bool predict_only,
                                      const MeasureFn& measure) {
  std::map<std::string, policy::HardwareProfile> profiles;
  std::vector<ResultRow> out;
  struct Pending {
    size_t index;       // into `out`
    YAML::Node config;  // the row's run config, `policy: auto` resolved
    bool peer = false;  // run the row's peer, not h2oflex
  };
  std::vector<Pending> pending;
  const size_t total = suite.rows.size();
  for (const SuiteRow& row : suite.rows) {
    ResultRow rr;
    rr.row = &row;
    rr.batch = row.published_batch;
    std::fprintf(stderr, "[%d/%zu] %s: ", row.index + 1, total,
                 row.label.empty() ? row.model.c_str() : row.label.c_str());
    if (row.peer) {
      rr.batch = row.config["batch_size"] ? row.config["batch_size"].as<std::string>() : "1";
      for (const auto& [key, value] : row.peer->args) {
        rr.policy += (rr.policy.empty() ? "" : " ") + key + " " + value;
      }
      if (!predict_only && row.measure) pending.push_back({out.size(), row.config, true});
      if (row.memory_cap) rr.policy += " " + cap_text(*row.memory_cap);
      std::fprintf(stderr, "peer (%s)\n", row.system.c_str());
      out.push_back(std::move(rr));
      continue;
    }
    if (!row.predict) {
      rr.note = "published number only (" + row.system + " is not modeled)";
      std::fprintf(stderr, "%s\n", rr.note.c_str());
      out.push_back(std::move(rr));
      continue;
    }
    auto it = profiles.find(row.hardware_profile);
    if (it == profiles.end()) {
      it = profiles
               .emplace(row.hardware_profile, policy::load_hardware_profile(row.hardware_profile))
               .first;
    }
    const policy::HardwareProfile& hw = it->second;
    YAML::Node config = YAML::Clone(row.config);
    const std::string cpath = row.where + ".config";
    const policy::KvPolicy& kv = row.kv;
    const policy::HardwareLimits& limits = row.hardware;
    // On a CPU both budgets are RAM inside the row's cgroup: a plan allowed more than the cap
    // would be ended by the kernel instead of refused by the planner.
    if (row.memory_cap && hw.compute_device == policy::ComputeDevice::Cpu) {
      const uint64_t budgets = limits.device_mem + limits.host_mem;
      H2OFLEX_INPUT_CHECK(budgets <= *row.memory_cap, row.where,
                          ".memory_cap: ", describe_bytes(*row.memory_cap),
                          " is less than the row's config.hardware device_mem + host_mem (",
                          describe_bytes(budgets), "), which a CPU run holds in RAM");
      H2OFLEX_INPUT_CHECK(limits.device_mem > 0 && limits.host_mem > 0, row.where,
                          ".memory_cap: needs config.hardware.device_mem and host_mem (the plan's "
                          "budgets inside the cap)");
    }
    const double eb = element_bytes(config, hw);
    const double ab = hw.compute_device == policy::ComputeDevice::Cpu ? 4 : 2;
    std::optional<policy::ModelShape> shape;
    try {
      shape = model_shape_for(row.model, eb, ab);
    } catch (const InputError& e) {
      rr.note = std::string("not predicted: ") + e.what();
    }
    policy::Policy pol;
    if (row.policy) {
      const policy::PolicySection& sec = *row.policy;
      if (sec.is_auto) {
        H2OFLEX_INPUT_CHECK(shape, cpath, ".policy: auto needs a model the cost model knows (",
                            rr.note, ")");
        pol =
            plan_policy(*shape, hw, row.prompt_len, row.gen_len, kv, limits, sec.allow_compression);
        config["policy"] = policy::policy_yaml(pol);
      } else {
        pol = sec.policy;
      }
    } else {
      // No policy: the run keeps everything in the compute tier with a plain batch.
      pol.gpu_batch_size = config["batch_size"] ? config["batch_size"].as<int>() : 1;
    }
    if (rr.batch.empty()) {
      rr.batch = std::to_string(pol.gpu_batch_size) + "x" + std::to_string(pol.num_gpu_batches);
    }
    rr.policy = pol.percent_string() + (pol.cpu_cache_compute ? " ccc" : "") +
                (pol.compress_weight ? " cw" : "") + (pol.compress_cache ? " cc" : "") +
                (pol.overlap ? "" : " no-overlap") + (kv.bounded() ? " " + kv.summary() : "") +
                (row.memory_cap ? " " + cap_text(*row.memory_cap) : "");
    if (shape) {
      const policy::Workload w{row.prompt_len, row.gen_len, kv};
      rr.estimate = policy::estimate_cost(*shape, hw, pol, w, row.published_context);
      rr.predicted = rr.estimate->total_tok_s;
    }
    if (!predict_only && row.measure) {
      const std::string skip =
          machine_skip_reason(hw, rr.estimate ? &*rr.estimate : nullptr, limits,
                              reusable_layout_bytes(config, limits.disk_path, pol.compress_weight));
      if (!skip.empty()) {
        rr.note = "not run: " + skip;
      } else if (!measure) {
        rr.note = "not run: no engine supplied";
      } else {
        // A relative disk path is the run's working directory's; make sure it exists.
        if (!limits.disk_path.empty()) std::filesystem::create_directories(limits.disk_path);
        // The row computes on the device its profile describes (not on whatever `auto` finds).
        YAML::Node run_config = YAML::Clone(config);
        if (!run_config["compute_device"]) {
          run_config["compute_device"] =
              hw.compute_device == policy::ComputeDevice::Gpu ? "cuda" : "cpu";
        }
        pending.push_back({out.size(), run_config, false});
      }
    }
    std::fprintf(stderr, "predicted %s tok/s, published %s%s%s\n",
                 rr.predicted ? short_number(*rr.predicted).c_str() : "-",
                 row.published_tok_s ? short_number(*row.published_tok_s).c_str() : "-",
                 rr.note.empty() ? "" : "; ", rr.note.c_str());
    out.push_back(std::move(rr));
  }
  // Measured runs, round by round over the rows, so that other load on a shared machine spreads
  // over all rows instead of landing on one.
  std::vector<std::vector<MeasuredRow>> runs(out.size());
  for (int round = 0; round < suite.repeats; ++round) {
    for (const Pending& pr : pending) {
      ResultRow& rr = out[pr.index];
      if (!rr.note.empty() && rr.note.rfind("run failed", 0) == 0) continue;
      std::fprintf(stderr, "[run %d/%d] %s: ", round + 1, suite.repeats,
                   rr.row->label.empty() ? rr.row->model.c_str() : rr.row->label.c_str());
      try {
        MeasuredRow m = rr.row->memory_cap ? run_capped_row(*rr.row, pr.config)
                        : pr.peer          ? run_peer(*rr.row)
                                           : measure(pr.config);
        if (!m.skip_reason.empty()) {
          rr.note = "not run: " + m.skip_reason;
          std::fprintf(stderr, "%s\n", rr.note.c_str());
          continue;
        }
        std::fprintf(stderr, "%s tok/s (predicted %s)\n", short_number(m.total_tok_s).c_str(),
                     rr.predicted ? short_number(*rr.predicted).c_str() : "-");
        if (!m.note.empty() && rr.note.empty()) rr.note = m.note;
        runs[pr.index].push_back(std::move(m));
      } catch (const std::exception& e) {
        rr.note = std::string("run failed: ") + e.what();
        std::fprintf(stderr, "%s\n", rr.note.c_str());
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<MeasuredRow>& r = runs[i];
    if (r.empty()) continue;
    std::sort(r.begin(), r.end(), [](const MeasuredRow& a, const MeasuredRow& b) {
      return a.total_tok_s < b.total_tok_s;
    });
    ResultRow& rr = out[i];
    for (const MeasuredRow& m : r) rr.measured_runs.push_back(m.total_tok_s);
    // The median run (the lower middle one for an even count).
    MeasuredRow& mid = r[(r.size() - 1) / 2];
    rr.measured = mid.total_tok_s;
    if (mid.projected && rr.note.empty()) rr.note = "measured value is projected";
    rr.measurement = std::move(mid);
  }
  for (ResultRow& rr : out) {
    if (!rr.measured) continue;
    const ResultRow* fastest = nullptr;
    for (const std::string& label : rr.row->versus) {
      for (const ResultRow& other : out) {
        if (other.row->label != label || !other.measured || *other.measured <= 0) continue;
        if (fastest == nullptr || *other.measured > *fastest->measured) fastest = &other;
      }
    }
    if (fastest == nullptr) continue;
    rr.versus_ratio = *rr.measured / *fastest->measured;
    rr.versus_label = fastest->row->label;
  }
  return out;
}

// The files `experiment` writes into --out; the path guard checks exactly these.
constexpr const char* kTableMd = "table.md";
constexpr const char* kTableCsv = "table.csv";
constexpr const char* kResultsJson = "results.json";

constexpr const char* kThroughputPng = "throughput.png";

int run_experiment(const ExperimentOptions& o, const MeasureFn& measure) {
  namespace fs = std::filesystem;
  H2OFLEX_INPUT_CHECK(!o.out_dir.empty(), "experiment: --out DIR is required");
  const Suite suite = load_suite(o.suite_path);
  // Before any row runs: no file written into --out may be one the suite reads.
  OutputDirectory out_dir(o.out_dir, "--out");
  check_output_paths(
      suite_inputs(suite),
      files_in(o.out_dir, {kTableMd, kTableCsv, kResultsJson, kSuitePlotPy, kThroughputPng},
               "--out"));
  std::fprintf(stderr, "suite %s: %zu rows%s\n", suite.name.c_str(), suite.rows.size(),
               o.predict ? " (predict only)" : "");
  const std::vector<ResultRow> rows = evaluate_suite(suite, o.predict, measure);
  out_dir.keep();
  auto write = [&](const char* name, const std::string& text) {
    const std::string p = (fs::path(o.out_dir) / name).string();
    write_file_atomically(p, text);
    return p;
  };
  write(kTableMd, results_markdown(suite, rows, o.predict));
  write(kTableCsv, results_csv(rows));
  const std::string json_path =
      write(kResultsJson, results_json(suite, rows, o.predict).dump(2) + "\n");
  const std::string png = (fs::path(o.out_dir) / kThroughputPng).string();
  const std::string why = write_plot(json_path, png);
  if (!why.empty()) std::fprintf(stderr, "no plot: %s\n", why.c_str());
  std::fprintf(stderr, "wrote %s/{%s,%s,%s%s}\n", o.out_dir.c_str(), kTableMd, kTableCsv,
               kResultsJson, why.empty() ? (std::string(",") + kThroughputPng).c_str() : "");
  return 0;
}

}  // namespace h2oflex
