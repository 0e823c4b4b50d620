// h2oflex command-line entry point.
#include "experiments/cli.h"

int main(int argc, char** argv) {
  return h2oflex::cli_main(argc, argv);
}
