// A suite's peer row: another system run on the row's shapes (tools/peer_hf.py is the Hugging
// Face one, tools/peer_llama_cpp.py llama.cpp's), so that h2oflex and its peer are measured side
// by side in one suite run.
#pragma once

#include "experiments/common/child_process.h"
#include "experiments/suite/experiment_suite.h"
#include "experiments/suite/memory_cap.h"
#include "experiments/suite/result_row.h"

namespace h2oflex {

// The interpreter for peer scripts: $H2OFLEX_PEER_PYTHON, else python3 on PATH.
std::string peer_python();

// Runs the row's peer once (inside `cap` when given). A peer that cannot run (no torch in the
// interpreter, a failed build, a failed script) gives a MeasuredRow with skip_reason and the end
// of its output, not an exception.
MeasuredRow run_peer(const SuiteRow& row, MemoryCap* cap = nullptr);

// A child run's MeasuredRow from the result document it wrote to `json_path` (h2oflex's keys:
// prefill / decode / total .throughput_tok_s); skip_reason "WHO failed (PROGRAM, status N): its
// output's end" when it failed, "WHO wrote no result" when it wrote none.
MeasuredRow measured_from_child(const ChildResult& r, const std::string& json_path,
                                const std::string& who, const std::string& program);

}  // namespace h2oflex
