// The `eval` subcommand's flags (`eval perplexity`, `eval choice`), kept beside the command.
#pragma once

#include <CLI/CLI.hpp>

#include "experiments/eval/eval_command.h"

namespace h2oflex {

struct EvalCli {
  CLI::App* perplexity = nullptr;
  CLI::App* choice = nullptr;
  CLI::App* suite = nullptr;
  std::string suite_path, suite_out, suite_model;
  // After parsing: runs the mode that was parsed; -1 when `eval` was not.
  int run(const EvalOptions& options) const;
};

// Adds `eval` with its two modes to `app`, parsing into `options` (which must outlive parsing).
// The returned EvalCli must stay where it is until parsing is done (the suite's flags point
// into it).
void add_eval_subcommand(CLI::App& app, EvalOptions& options, EvalCli& cli);

}  // namespace h2oflex
