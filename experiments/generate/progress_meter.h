// Progress of a generate job on stderr: requests done / total, generated tokens per second and
// the estimated time left. A bar redrawn in place on a terminal; a line every `interval_s`
// seconds otherwise (logs, pipes), so long jobs leave a readable trail.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "runtime/core/timer.h"

namespace h2oflex::generate {

class ProgressMeter {
 public:
  // `already_done` requests were finished by an earlier run; they count as done but not toward
  // the rate.
  ProgressMeter(int64_t total, int64_t already_done, bool terminal, double interval_s = 10.0,
                std::FILE* out = stderr);

  // Called after each block with the requests it finished and the tokens it generated.
  void advance(int64_t requests, int64_t tokens);
  // Final line (always printed).
  void finish();

  // "120/2000 (6.0%)  153.2 tok/s  ETA 3m12s" for the given elapsed time.
  std::string status(double elapsed_s) const;

 private:
  void draw(bool force);

  int64_t total_, done_, done_this_run_ = 0, tokens_ = 0, printed_done_ = -1;
  bool terminal_;
  double interval_s_, last_print_s_ = -1;
  std::FILE* out_;
  Stopwatch watch_;
};

// "45s", "3m12s", "2h05m".
std::string format_duration(double seconds);

}  // namespace h2oflex::generate
