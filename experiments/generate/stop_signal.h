// SIGINT / SIGTERM ask a generate job to stop after the block in flight: the handler only sets a
// flag that the job checks between blocks. A second signal goes to the handler found before
// (the temporary-file cleanup, which then ends the process): a job must still be stoppable at
// once when a block takes long.
#pragma once

namespace h2oflex::generate {

class StopSignalGuard {
 public:
  StopSignalGuard();   // installs the handlers
  ~StopSignalGuard();  // restores the previous ones
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  bool requested() const;
  int signal_number() const;  // 0 when none arrived
};

}  // namespace h2oflex::generate
