// h2oflex command-line entry point.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "experiments/cli.h"
#include "runtime/dist/transport.h"
#ifdef H2OFLEX_HAVE_MPI
#include "runtime/dist/mpi_transport.h"
#endif

namespace {

// mpirun (Open MPI, MPICH, PMIx launchers) names the job's size in the environment of its ranks.
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP workers that spin while idle steal the only other core from the I/O queues' threads
  // on small machines (measured: decode 3-5x slower). libgomp reads its wait policy when it is
  // loaded, before main, so set it and start again once; an explicit setting is respected.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
  }
#ifdef H2OFLEX_HAVE_MPI
  // One rank of an `mpirun -np S` job: a pipeline stage (runtime/dist). Rank 0 speaks for the
  // job on stdout; every rank's errors reach stderr through abort_all.
  if (launched_by_mpirun()) {
    const h2oflex::MpiSession session(&argc, &argv);
    h2oflex::MpiTransport world(session);
    h2oflex::set_job_transport(&world);
    if (world.rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
      world.abort_all("cannot silence stdout on a rank other than 0");
    }
    const int rc = h2oflex::cli_main(argc, argv);
    h2oflex::set_job_transport(nullptr);
    return rc;
  }
#endif
  return h2oflex::cli_main(argc, argv);
}
