#!/usr/bin/env bash
# The test suite under sanitizers, CPU only: an ASan + UBSan build of every test (build-asan/).
# With H2OFLEX_TSAN=1 also a TSan build of the threaded parts, the transfer and io engines,
# generate and the pipeline (build-tsan/). CI runs both after the normal tests. Any report fails
# the run. Extra arguments go to the ctest calls.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
# -O1 with line tables (-g1) is what the sanitizers' reports need, and compiles in half the time
# of -O2 -g, which keeps CI's sanitizer builds within its budget. Open MPI is not
# sanitizer-clean, so no MPI code is built here and the mpi label is left out.
# The Python module is left out too: an instrumented extension cannot load into an uninstrumented
# interpreter (the sanitizer runtime must come first), and ./test.sh runs its tests.
common=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  -DH2OFLEX_CUDA=OFF -DH2OFLEX_MPI=OFF -DH2OFLEX_PYTHON=OFF)

asan="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-asan "${common[@]}" -DCMAKE_CXX_FLAGS="$asan" >/dev/null
cmake --build build-asan -j "$jobs"
echo "sanitize: ASan + UBSan build done after ${SECONDS} s"
(
  cd build-asan
  ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --output-on-failure -j "$jobs" -LE "gpu|mpi" "$@"
)
echo "sanitize: ASan + UBSan tests done after ${SECONDS} s"

if [ "${H2OFLEX_TSAN:-0}" = 1 ]; then
  tsan="-fsanitize=thread -fno-omit-frame-pointer"
  cmake -S . -B build-tsan "${common[@]}" -DCMAKE_CXX_FLAGS="$tsan" >/dev/null
  cmake --build build-tsan -j "$jobs" --target offload_tests fault_tests generate_tests engine_tests
  echo "sanitize: TSan build done after ${SECONDS} s"
  (
    cd build-tsan
    # OpenMP's runtime is not instrumented: its barriers look like races to TSan, so the run
    # uses one OpenMP thread; the threads under test (I/O queues, transfers, pipeline stages)
    # are the engine's own.
    OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      ctest --output-on-failure -j "$jobs" -L "offload|fault|generate|engine" "$@"
  )
  echo "sanitize: TSan tests done after ${SECONDS} s"
fi
