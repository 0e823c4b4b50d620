// A suite's peer row: another system run on the row's shapes (tools/peer_hf.py is the Hugging
// Face one), so that h2oflex and its peer are measured side by side in one suite run.
#pragma once

#include "experiments/suite/experiment_suite.h"
#include "experiments/suite/result_row.h"

namespace h2oflex {

// The interpreter for peer scripts: $H2OFLEX_PEER_PYTHON, else python3 on PATH.
std::string peer_python();

// Runs the row's peer once. A peer that cannot run (no torch in the interpreter, a failed
// script) gives a MeasuredRow with skip_reason and the end of its output, not an exception.
MeasuredRow run_peer(const SuiteRow& row);

}  // namespace h2oflex
