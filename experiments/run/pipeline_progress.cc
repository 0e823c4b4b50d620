#include "experiments/run/pipeline_progress.h"

#include <cstdio>

namespace h2oflex {

void print_progress(const PipelineProgress& p) {
  const double eta = p.done > 0 ? p.elapsed_s / p.done * (p.total - p.done) : 0;
  if (p.prefill) {
    std::fprintf(stderr, "\rprefill layer %d/%d  %.1f s  ETA %.1f s   ", p.done, p.total,
                 p.elapsed_s, eta);
  } else {
    std::fprintf(stderr, "\rdecode step %d/%d  %.2f tok/s  ETA %.1f s   ", p.done, p.total,
                 p.tokens_per_s, eta);
  }
  if (p.done == p.total) std::fprintf(stderr, "\n");
}

}  // namespace h2oflex
