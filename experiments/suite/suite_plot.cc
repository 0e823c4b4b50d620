#include "experiments/suite/suite_plot.h"

#include <filesystem>

#include "experiments/common/child_process.h"
#include "experiments/common/output_paths.h"

namespace h2oflex {

namespace {

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

}  // namespace

std::string write_plot(const std::string& results_json_path, const std::string& png_path) {
  return write_plot_with(kPlotScript, kSuitePlotPy, results_json_path, png_path);
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

}  // namespace h2oflex
