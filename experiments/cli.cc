#include "experiments/cli.h"

#include <cstdio>

namespace h2oflex {

int cli_main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "h2oflex: no subcommands yet\n");
  return 2;
}

}  // namespace h2oflex
