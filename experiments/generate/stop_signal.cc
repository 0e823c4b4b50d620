#include "experiments/generate/stop_signal.h"

#include <unistd.h>

#include <csignal>

namespace h2oflex::generate {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
struct sigaction g_previous_int, g_previous_term;

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  // The next SIGINT or SIGTERM goes to the handlers found at install: the temporary-file
  // cleanup (temp_file_cleanup.h), which removes what is half written and then ends the process
  // (sigaction is async-signal-safe).
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
  // Said now, not after the block: the user must know the job heard them and that pressing
  // Ctrl-C again kills it (write() is async-signal-safe; its result cannot be acted on here).
  static const char kMessage[] =
      "\ngenerate: stopping after the block in flight; a second signal ends the job at once "
      "(run the same command again to resume)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  g_stop_signal = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_previous_int);
  sigaction(SIGTERM, &sa, &g_previous_term);
}

StopSignalGuard::~StopSignalGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

bool StopSignalGuard::requested() const {
  return g_stop_signal != 0;
}

int StopSignalGuard::signal_number() const {
  return g_stop_signal;
}

}  // namespace h2oflex::generate
