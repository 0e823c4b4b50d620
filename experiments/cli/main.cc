// h2oflex command-line entry point.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "experiments/cli/cli.h"
#include "runtime/dist/job_device_link.h"
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

// The first of the environment variables that is set, as a number; -1 when none is.
int env_number(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return -1;
}

// The engine computes on CUDA device 0. Ranks sharing a machine each take a GPU of their own
// (local rank i sees only GPU i) when the machine has one per local rank and the user has not
// chosen with CUDA_VISIBLE_DEVICES. Set before any CUDA call: the runtime reads it once. The
// GPUs are counted from the driver's /proc entries, as CUDA may not be touched yet.
void give_each_local_rank_a_gpu() {
  if (std::getenv("CUDA_VISIBLE_DEVICES") != nullptr) return;
  const int local_rank = env_number(
      {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"});
  const int local_size =
      env_number({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"});
  if (local_rank < 0 || local_size < 1) return;
  std::error_code ec;
  int gpus = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    ++gpus;
  }
  if (gpus < local_size) return;  // shared GPUs: no NCCL link, every rank on device 0
  setenv("CUDA_VISIBLE_DEVICES", std::to_string(local_rank).c_str(), 1);
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
    give_each_local_rank_a_gpu();
    const h2oflex::MpiSession session(&argc, &argv);
    h2oflex::MpiTransport world(session);
    h2oflex::set_job_transport(&world);
    if (world.rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) {
      world.abort_all("cannot silence stdout on a rank other than 0");
    }
    const int rc = h2oflex::cli_main(argc, argv);
    h2oflex::release_job_device_link();
    h2oflex::set_job_transport(nullptr);
    return rc;
  }
#endif
  return h2oflex::cli_main(argc, argv);
}
