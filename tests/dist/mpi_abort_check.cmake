# Runs dist_mpi_abort_probe under mpiexec and checks that rank 1's abort_all ends the whole job:
# within LIMIT_S seconds (rank 0 is blocked in recv and would otherwise wait forever), with a
# nonzero exit status, and with rank 1's message on stderr.
# Arguments (-D): MPIEXEC, NP_FLAG, NP, FLAGS (mpiexec options joined with |), PROBE, LIMIT_S.
string(REPLACE "|" ";" flags "${FLAGS}")
# Open MPI's mpirun ends a job that outlives MPIEXEC_TIMEOUT seconds, ranks and all; the
# longer TIMEOUT below is for other mpiexecs (it kills mpiexec itself, not the ranks).
set(ENV{MPIEXEC_TIMEOUT} ${LIMIT_S})
math(EXPR hard_limit "${LIMIT_S} + 5")
string(TIMESTAMP start "%s")
execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} ${NP} ${flags} ${PROBE}
                TIMEOUT ${hard_limit} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(TIMESTAMP end "%s")
math(EXPR elapsed "${end} - ${start}")
message(STATUS "mpiexec with ${NP} ranks ended after about ${elapsed} s with status '${rc}'")
set(expected "h2oflex rank 1/${NP}: rank 1 stops the job on purpose")
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end within ${hard_limit} s (${rc}): abort_all hangs\n"
                      "stdout:\n${out}\nstderr:\n${err}")
endif()
if(elapsed GREATER_EQUAL LIMIT_S)
  message(FATAL_ERROR "the job took ${elapsed} s to end (limit ${LIMIT_S} s)\n"
                      "stdout:\n${out}\nstderr:\n${err}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job exited 0 after abort_all\nstdout:\n${out}\nstderr:\n${err}")
endif()
string(FIND "${err}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "stderr lacks '${expected}'\nstdout:\n${out}\nstderr:\n${err}")
endif()
string(FIND "${out}${err}" "rank 0 received" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "rank 0's recv returned although rank 1 sent nothing\n${out}${err}")
endif()
