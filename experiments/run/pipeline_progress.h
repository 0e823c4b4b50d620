// The progress line `run` prints on stderr while the pipeline works.
#pragma once

#include "engine/pipeline.h"

namespace h2oflex {

// "prefill layer 3/26  1.2 s  ETA 9.0 s" / "decode step 4/31  2.15 tok/s  ETA 12.0 s", rewritten
// in place, with a newline after the last unit or step.
void print_progress(const PipelineProgress& p);

}  // namespace h2oflex
