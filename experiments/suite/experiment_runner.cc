#include "experiments/suite/experiment_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/compute_device.h"
#include "engine/model_footprint.h"
#include "engine/model_layout.h"
#include "engine/tier_set.h"
#include "experiments/common/child_process.h"
#include "experiments/common/model_source.h"
#include "experiments/common/output_paths.h"
#include "experiments/common/run_config.h"
#include "experiments/plan/plan_command.h"
#include "experiments/suite/peer_run.h"
#include "policy/kv_policy.h"
#include "runtime/core/byte_size.h"
#include "runtime/core/disk_space.h"
#include "runtime/core/error.h"
#include "runtime/ops/compute_choice.h"

namespace h2oflex {

namespace {

std::string fmt(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits + 1, v);
  return buf;
}

std::string opt_fmt(const std::optional<double>& v) {
  return v ? fmt(*v) : "";
}

double element_bytes(const YAML::Node& config, const policy::HardwareProfile& hw) {
  if (hw.compute_device == policy::ComputeDevice::Gpu) return 2;  // fp16, as FlexGen
  const std::string dtype =
      config["compute_dtype"] ? config["compute_dtype"].as<std::string>() : "auto";
  return resolve_compute_type(dtype) == ops::ComputeType::F32 ? 4 : 2;
}

YAML::Node policy_node(const policy::Policy& p) {
  YAML::Node n;
  n["gpu_batch_size"] = p.gpu_batch_size;
  n["num_gpu_batches"] = p.num_gpu_batches;
  n["weights"]["gpu"] = p.w_gpu;
  n["weights"]["cpu"] = p.w_cpu;
  n["cache"]["gpu"] = p.cache_gpu;
  n["cache"]["cpu"] = p.cache_cpu;
  n["activations"]["gpu"] = p.act_gpu;
  n["activations"]["cpu"] = p.act_cpu;
  n["overlap"] = p.overlap;
  n["cpu_cache_compute"] = p.cpu_cache_compute;
  n["pin_weight"] = p.pin_weight;
  n["compress_weight"] = p.compress_weight;
  n["compress_cache"] = p.compress_cache;
  return n;
}

// -1 when the file system cannot be asked (the row is then not skipped for its disk).
double free_disk_bytes(const std::string& dir) {
  try {
    return static_cast<double>(free_bytes_at(dir));
  } catch (const InputError&) {
    return -1;
  }
}

double physical_ram_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * page : -1;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// The matplotlib script; written next to results.json so the plot can be redrawn by hand.
constexpr const char* kPlotScript =
    R"PY(# Redraws throughput.png from results.json: python3 plot.py results.json throughput.png
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

doc = json.load(open(sys.argv[1]))
rows = doc["rows"]
labels = [r["label"] or f'{r["system"]} {r["model"]} {r["prompt_len"]}+{r["gen_len"]}' for r in rows]
series = [("published", "published_tok_s", "#999999"),
          ("predicted", "predicted_tok_s", "#4c72b0"),
          ("measured", "measured_tok_s", "#dd8452")]
fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.5))
height = 0.27
for k, (name, key, color) in enumerate(series):
    ys = [i + (k - 1) * height for i in range(len(rows))]
    xs = [r.get(key) or 0 for r in rows]
    ax.barh(ys, xs, height=height, label=name, color=color)
ax.set_yticks(range(len(rows)))
ax.set_yticklabels(labels, fontsize=8)
ax.invert_yaxis()
if any((r.get(s[1]) or 0) > 0 for r in rows for s in series):
    ax.set_xscale("log")
ax.set_xlabel("generation throughput, tokens/s (log scale)")
ax.set_title(f'{doc["suite"]}: ' + ("predicted vs published" if doc["predict_only"] else "measured vs predicted vs published"))
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
)PY";

// "12.3" for one run; "12.3 (11.9-13.0, 3 runs)" = median (min-max) for several.
std::string measured_cell(const ResultRow& r) {
  std::string cell = opt_fmt(r.measured);
  if (r.measured_runs.size() > 1) {
    cell += " (" + fmt(r.measured_runs.front()) + "-" + fmt(r.measured_runs.back()) + ", " +
            std::to_string(r.measured_runs.size()) + " runs)";
  }
  return cell;
}

}  // namespace

std::optional<double> ResultRow::ratio() const {
  const std::optional<double> published = row ? row->published_tok_s : std::nullopt;
  if (measured && published) return *measured / *published;
  if (predicted && published) return *predicted / *published;
  if (measured && predicted) return *measured / *predicted;
  return std::nullopt;
}

std::optional<bool> ResultRow::within_band() const {
  if (!row || !row->band) return std::nullopt;
  std::optional<double> r;
  if (predicted && row->published_tok_s) {
    r = *predicted / *row->published_tok_s;
  } else if (measured && predicted) {
    r = *measured / *predicted;
  }
  if (!r) return std::nullopt;
  return std::fabs(*r - 1) <= *row->band + 1e-12;
}

uint64_t reusable_layout_bytes(const YAML::Node& config, const std::string& disk_path,
                               bool compress) {
  namespace fs = std::filesystem;
  std::vector<DType> types;
  ModelSource src;
  try {
    const RunConfig rc = parse_run_config(config, "suite row");
    if (auto ct = ops::parse_compute_dtype(rc.compute_dtype, "compute_dtype")) {
      types = {matrix_dtype_for(*ct)};
    } else {  // auto: chosen by measuring, when the run starts
      types = {DType::BF16, DType::F32, DType::F16};
    }
    src = open_model_source(rc.model, rc.dummy, rc.seed);
  } catch (const std::exception&) {
    return 0;  // the run itself reports what is wrong with the row
  }
  uint64_t largest = 0;
  for (DType t : types) {
    const fs::path data =
        fs::path(model_layout_dir(disk_path_or_default(disk_path), src.key, t, compress)) /
        WeightLayout::kDataFile;
    std::error_code ec;
    const uint64_t bytes = fs::exists(data, ec) ? fs::file_size(data, ec) : 0;
    if (!ec) largest = std::max(largest, bytes);
  }
  return largest;
}

std::string machine_skip_reason(const policy::HardwareProfile& hw, const policy::CostEstimate* e,
                                const policy::HardwareLimits& limits, uint64_t reusable_disk) {
  std::string no_gpu;
  if (hw.compute_device == policy::ComputeDevice::Gpu && !cuda_compute_available(&no_gpu)) {
    // Measured on the CPU, a GPU profile's row would be a CPU number under a GPU label.
    return "profile '" + hw.name + "' computes on a GPU; " + no_gpu;
  }
  if (!e) return "";
  const std::string disk_path = disk_path_or_default(limits.disk_path);
  const double free_disk = free_disk_bytes(disk_path);
  const double new_disk = e->peak.disk - static_cast<double>(reusable_disk);
  if (new_disk > 0 && free_disk >= 0 && new_disk > free_disk) {
    return "needs ~" + format_bytes(e->peak.disk) + " on disk (" + format_bytes(new_disk) +
           " new), " + format_bytes(free_disk) + " free at " + disk_path;
  }
  const double ram = physical_ram_bytes();
  const double in_ram =
      e->peak.host + (hw.compute_device == policy::ComputeDevice::Cpu ? e->peak.device : 0);
  if (ram > 0 && in_ram > 0.9 * ram) {
    return "needs ~" + format_bytes(in_ram) + " of RAM, this machine has " + format_bytes(ram);
  }
  return "";
}

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
    const policy::KvPolicy kv =
        config["kv"] ? policy::parse_kv_policy(config["kv"], cpath + ".kv") : policy::KvPolicy{};
    const policy::HardwareLimits limits =
        config["hardware"] ? policy::parse_hardware_limits(config["hardware"], cpath + ".hardware")
                           : policy::HardwareLimits{};
    const double eb = element_bytes(config, hw);
    const double ab = hw.compute_device == policy::ComputeDevice::Cpu ? 4 : 2;
    std::optional<policy::ModelShape> shape;
    try {
      shape = model_shape_for(row.model, eb, ab);
    } catch (const InputError& e) {
      rr.note = std::string("not predicted: ") + e.what();
    }
    policy::Policy pol;
    if (config["policy"]) {
      const policy::PolicySection sec =
          policy::parse_policy_section(config["policy"], cpath + ".policy");
      if (sec.is_auto) {
        H2OFLEX_INPUT_CHECK(shape, cpath, ".policy: auto needs a model the cost model knows (",
                            rr.note, ")");
        pol =
            plan_policy(*shape, hw, row.prompt_len, row.gen_len, kv, limits, sec.allow_compression);
        config["policy"] = policy_node(pol);
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
                (pol.overlap ? "" : " no-overlap") + (kv.bounded() ? " " + kv.summary() : "");
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
                 rr.predicted ? fmt(*rr.predicted).c_str() : "-",
                 row.published_tok_s ? fmt(*row.published_tok_s).c_str() : "-",
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
        MeasuredRow m = pr.peer ? run_peer(*rr.row) : measure(pr.config);
        if (!m.skip_reason.empty()) {
          rr.note = "not run: " + m.skip_reason;
          std::fprintf(stderr, "%s\n", rr.note.c_str());
          continue;
        }
        std::fprintf(stderr, "%s tok/s (predicted %s)\n", fmt(m.total_tok_s).c_str(),
                     rr.predicted ? fmt(*rr.predicted).c_str() : "-");
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

std::string results_csv(const std::vector<ResultRow>& rows) {
  std::ostringstream os;
  os << "system,model,prompt_len,gen_len,batch,policy,published_tok_s,predicted_tok_s,"
        "measured_tok_s,ratio\n";
  for (const ResultRow& r : rows) {
    const SuiteRow& s = *r.row;
    os << csv_field(s.system) << ',' << csv_field(s.model) << ',' << s.prompt_len << ','
       << s.gen_len << ',' << csv_field(r.batch) << ',' << csv_field(r.policy) << ','
       << opt_fmt(s.published_tok_s) << ',' << opt_fmt(r.predicted) << ',' << opt_fmt(r.measured)
       << ',' << opt_fmt(r.ratio()) << '\n';
  }
  return os.str();
}

std::string results_markdown(const Suite& suite, const std::vector<ResultRow>& rows,
                             bool predict_only) {
  std::ostringstream os;
  os << "# " << suite.name << "\n\n";
  if (!suite.description.empty()) os << suite.description << "\n\n";
  os << "Generation throughput in tokens/s = batch x gen_len / (prefill + decode time) (FlexGen's "
        "definition). "
     << (predict_only ? "Cost-model predictions only (`--predict`). "
                      : "Measured on this machine where it can run. ")
     << "ratio = (measured, else predicted) / (published, else predicted); with several runs, "
        "measured = median (min-max); \"1.56 x L\" = measured / row L's measured. policy = "
        "FlexGen's "
        "percent order (w_gpu w_cpu cache_gpu cache_cpu act_gpu act_cpu); ccc = "
        "cpu_cache_compute; cw, cc = 4-bit compress_weight, compress_cache.\n\n";
  os << "| row | system | model | prompt+gen | batch | policy | published | predicted | measured "
        "| ratio | note |\n";
  os << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ResultRow& r : rows) {
    const SuiteRow& s = *r.row;
    std::string ratio =
        r.versus_ratio ? fmt(*r.versus_ratio) + " x " + r.versus_label : opt_fmt(r.ratio());
    if (const auto ok = r.within_band()) {
      ratio += std::string(*ok ? " (within " : " (OUTSIDE ") + "±" + fmt(*s.band * 100, 2) + "%)";
    }
    os << "| " << (s.label.empty() ? std::to_string(s.index) : s.label) << " | " << s.system
       << " | " << s.model << " | " << s.prompt_len << "+" << s.gen_len << " | " << r.batch << " | "
       << r.policy << " | " << opt_fmt(s.published_tok_s) << " | " << opt_fmt(r.predicted) << " | "
       << measured_cell(r) << " | " << ratio << " | " << r.note << " |\n";
  }
  return os.str();
}

nlohmann::json results_json(const Suite& suite, const std::vector<ResultRow>& rows,
                            bool predict_only) {
  nlohmann::json doc;
  doc["suite"] = suite.name;
  doc["suite_path"] = suite.path;
  doc["predict_only"] = predict_only;
  doc["metric"] =
      "tokens/s; total = batch*gen_len/(prefill+decode), decode = batch*(gen_len-1)/decode, "
      "prefill = batch*prompt_len/prefill";
  nlohmann::json arr = nlohmann::json::array();
  auto num = [](const std::optional<double>& v) -> nlohmann::json {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  for (const ResultRow& r : rows) {
    const SuiteRow& s = *r.row;
    nlohmann::json j;
    j["index"] = s.index;
    j["label"] = s.label;
    j["system"] = s.system;
    j["model"] = s.model;
    j["prompt_len"] = s.prompt_len;
    j["gen_len"] = s.gen_len;
    j["batch"] = r.batch;
    j["policy"] = r.policy;
    j["hardware_profile"] = s.hardware_profile;
    j["published_tok_s"] = num(s.published_tok_s);
    j["predicted_tok_s"] = num(r.predicted);
    j["measured_tok_s"] = num(r.measured);
    j["measured_runs_tok_s"] = r.measured_runs;
    j["ratio"] = num(r.ratio());
    if (!s.versus.empty()) {
      j["versus_rows"] = s.versus;
      j["versus"] =
          r.versus_label.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.versus_label);
      j["versus_ratio"] = num(r.versus_ratio);
    }
    j["band"] = num(s.band);
    const auto ok = r.within_band();
    j["within_band"] = ok ? nlohmann::json(*ok) : nlohmann::json(nullptr);
    j["note"] = r.note;
    if (r.estimate) {
      const policy::CostEstimate& e = *r.estimate;
      j["predicted"] = {
          {"prefill_tok_s", e.prefill_tok_s},
          {"decode_tok_s", e.decode_tok_s},
          {"total_tok_s", e.total_tok_s},
          {"prefill_s", e.prefill_s},
          {"decode_s", e.decode_s},
          {"decode_context",
           s.published_context == policy::DecodeContext::Mean ? "mean" : "first_decode_step"},
          {"decode_kv_tokens", e.decode_kv_tokens},
          {"bottleneck", {{"prefill", e.prefill.bottleneck}, {"decode", e.decode.bottleneck}}},
          {"peak_bytes",
           {{"device", e.peak.device}, {"host", e.peak.host}, {"disk", e.peak.disk}}}};
    }
    if (r.measurement) {
      const MeasuredRow& m = *r.measurement;
      j["measured"] = {{"prefill_tok_s", m.prefill_tok_s},
                       {"decode_tok_s", m.decode_tok_s},
                       {"total_tok_s", m.total_tok_s},
                       {"projected", m.projected},
                       {"skip_reason", m.skip_reason}};
      if (!m.details.is_null()) j["measured"]["details"] = m.details;
    }
    arr.push_back(std::move(j));
  }
  doc["rows"] = std::move(arr);
  return doc;
}

// The files `experiment` writes into --out; the path guard checks exactly these.
constexpr const char* kTableMd = "table.md";
constexpr const char* kTableCsv = "table.csv";
constexpr const char* kResultsJson = "results.json";
constexpr const char* kPlotPy = "plot.py";
constexpr const char* kThroughputPng = "throughput.png";

std::string write_plot(const std::string& results_json_path, const std::string& png_path) {
  return write_plot_with(kPlotScript, kPlotPy, results_json_path, png_path);
}

std::string write_plot_with(const char* script_text, const std::string& script_name,
                            const std::string& results_json_path, const std::string& png_path) {
  namespace fs = std::filesystem;
  const fs::path script = fs::path(results_json_path).parent_path() / script_name;
  write_file_atomically(script.string(), script_text);
  // Debian's python3-matplotlib lives under /usr/bin/python3, which a python3 earlier on PATH
  // (a virtualenv, pyenv) may hide.
  std::string python;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    if (run_child({candidate, "-c", "import matplotlib"}, ChildOutput::Discard).exit_code == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) {
    return "python3 with matplotlib is not installed (Debian: python3-matplotlib)";
  }
  const ChildResult plot = run_child({python, script.string(), results_json_path, png_path});
  if (plot.exit_code != 0) {
    return "plot script " + script.string() + " failed: " + plot.output.substr(0, 2000);
  }
  return "";
}

int run_experiment(const ExperimentOptions& o, const MeasureFn& measure) {
  namespace fs = std::filesystem;
  H2OFLEX_INPUT_CHECK(!o.out_dir.empty(), "experiment: --out DIR is required");
  const Suite suite = load_suite(o.suite_path);
  // Before any row runs: no file written into --out may be one the suite reads.
  OutputDirectory out_dir(o.out_dir, "--out");
  check_output_paths(
      suite_inputs(suite),
      files_in(o.out_dir, {kTableMd, kTableCsv, kResultsJson, kPlotPy, kThroughputPng}, "--out"));
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
