#include "experiments/cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "experiments/run_command.h"
#include "runtime/core/error.h"

namespace h2oflex {

int cli_main(int argc, char** argv) {
  CLI::App app{"h2oflex: high-throughput offloaded generation with H2O KV eviction"};
  app.require_subcommand(1);

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "run one throughput experiment from a YAML config");
  run_cmd->add_option("config", run.config_path, "run configuration (YAML)")->required();
  run_cmd->add_option("--json", run.json_out, "write the result document here");
  run_cmd->add_option("--set", run.overrides, "override a config key: key=value (repeatable)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (run_cmd->parsed()) return run_command(run);
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const IoError& e) {
    std::fprintf(stderr, "I/O error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace h2oflex
