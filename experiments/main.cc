// h2oflex command-line entry point.
#include <unistd.h>

#include <cstdlib>

#include "experiments/cli.h"

int main(int argc, char** argv) {
  // OpenMP workers that spin while idle steal the only other core from the I/O queues' threads
  // on small machines (measured: decode 3-5x slower). libgomp reads its wait policy when it is
  // loaded, before main, so set it and start again once; an explicit setting is respected.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
  }
  return h2oflex::cli_main(argc, argv);
}
