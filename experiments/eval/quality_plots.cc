#include "experiments/eval/quality_plots.h"

#include <cstdio>

#include "experiments/suite/suite_plot.h"

namespace h2oflex::eval {

namespace {

// Matplotlib script written beside results.json: one panel per task, its metric against the
// budget for each policy, the full cache as a dashed line.
constexpr const char* kQualityPlot =
    R"PY(# Redraws quality.png from results.json: python3 quality_plot.py results.json quality.png
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

doc = json.load(open(sys.argv[1]))
tasks = doc["tasks"]
fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
# One colour per policy in every panel (a policy that is n/a on a task must not shift the others).
cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
colour = {pol: cycle[i % len(cycle)] for i, pol in enumerate(doc["policies"])}
handles = {}
for ax, task in zip(axes[0], tasks):
    key = "perplexity" if task["kind"] == "perplexity" else "acc"
    for pol in doc["policies"]:
        cells = [c for c in doc["cells"] if c["policy"] == pol and c["task"] == task["name"] and key in c]
        if not cells:
            continue
        if cells[0]["budget"] is None:
            h = ax.axhline(cells[0][key], color="black", linestyle="--", label=pol)
        else:
            h, = ax.plot([c["budget"] for c in cells], [c[key] for c in cells], marker="o",
                         color=colour[pol], label=pol)
        handles.setdefault(pol, h)
    ax.set_xlabel("KV budget (fraction of the sequence)")
    ax.set_ylabel(key)
    ax.set_title(task["name"])
fig.legend(handles.values(), handles.keys(), loc="center right", fontsize=8)
fig.suptitle(doc["suite"] + ": " + doc["model"])
fig.tight_layout(rect=(0, 0, 0.88, 1))
fig.savefig(sys.argv[2], dpi=110)
)PY";

// The group plot: accuracy per group (in the task's order) for the chosen policies.
constexpr const char* kGroupPlot =
    R"PY(# Redraws groups.png from results.json: python3 groups_plot.py results.json groups.png
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

doc = json.load(open(sys.argv[1]))
plot = doc["group_plot"]
fig, axes = plt.subplots(1, len(plot["tasks"]), figsize=(5.2 * len(plot["tasks"]), 4.0),
                         squeeze=False)
for ax, task in zip(axes[0], plot["tasks"]):
    groups = None
    for pol in plot["policies"]:
        cells = [c for c in doc["cells"] if c["policy"] == pol and c["task"] == task
                 and "groups" in c
                 and (c["budget"] is None or abs(c["budget"] - plot["budget"]) < 1e-9)]
        if not cells:
            continue
        g = cells[0]["groups"]
        groups = groups or list(g)
        style = "--" if cells[0]["budget"] is None else "-"
        ax.plot(range(len(groups)), [g[k]["acc"] for k in groups], style, marker="o", label=pol)
    if groups:
        ax.set_xticks(range(len(groups)), groups, rotation=45, ha="right", fontsize=8)
    ax.axhline(plot["chance"][task], color="grey", linestyle=":", label="chance")
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("accuracy")
    ax.set_title(f'{task}: KV budget {100 * plot["budget"]:.0f}%', fontsize=9)
    ax.legend(fontsize=8)
fig.suptitle(doc["suite"] + ": " + doc["model"].rstrip("/").split("/")[-1], fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
)PY";

}  // namespace

std::string write_quality_plots(const QualitySuite& suite, const std::filesystem::path& out,
                                const std::string& json_path) {
  const std::string why =
      write_plot_with(kQualityPlot, kPlotPy, json_path, (out / kPlotPng).string());
  if (!why.empty()) std::fprintf(stderr, "eval suite: no plot: %s\n", why.c_str());
  std::string plots = why.empty() ? std::string(",") + kPlotPng : "";
  if (suite.group_plot) {
    const std::string no_group_plot =
        write_plot_with(kGroupPlot, kGroupPlotPy, json_path, (out / kGroupPlotPng).string());
    if (!no_group_plot.empty()) {
      std::fprintf(stderr, "eval suite: no group plot: %s\n", no_group_plot.c_str());
    } else {
      plots += std::string(",") + kGroupPlotPng;
    }
  }
  return plots;
}

}  // namespace h2oflex::eval
