#include "experiments/generate/progress_meter.h"

#include <cmath>

#include "runtime/core/error.h"

namespace h2oflex::generate {

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return buf;
}

ProgressMeter::ProgressMeter(int64_t total, int64_t already_done, bool terminal, double interval_s,
                             std::FILE* out)
    : total_(total), done_(already_done), terminal_(terminal), interval_s_(interval_s), out_(out) {}

std::string ProgressMeter::status(double elapsed_s) const {
  const double pct = total_ > 0 ? 100.0 * static_cast<double>(done_) / total_ : 100.0;
  std::string s = detail::concat(done_, "/", total_, " (");
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.1f%%)", pct);
  s += buf;
  if (done_this_run_ > 0 && elapsed_s > 0) {
    std::snprintf(buf, sizeof buf, "  %.1f tok/s", static_cast<double>(tokens_) / elapsed_s);
    s += buf;
    const double per_request = elapsed_s / static_cast<double>(done_this_run_);
    s += "  ETA " + format_duration(per_request * static_cast<double>(total_ - done_));
  } else if (done_ < total_) {
    s += "  ETA --";
  }
  return s;
}

void ProgressMeter::advance(int64_t requests, int64_t tokens) {
  done_ += requests;
  done_this_run_ += requests;
  tokens_ += tokens;
  draw(false);
}

void ProgressMeter::finish() {
  // A log already showing the final count needs no repeat.
  if (terminal_ || printed_done_ != done_) draw(true);
  if (terminal_) std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressMeter::draw(bool force) {
  const double t = watch_.elapsed();
  if (!terminal_ && !force && last_print_s_ >= 0 && t - last_print_s_ < interval_s_) return;
  last_print_s_ = t;
  printed_done_ = done_;
  if (!terminal_) {
    std::fprintf(out_, "generate: %s\n", status(t).c_str());
    std::fflush(out_);
    return;
  }
  constexpr int kWidth = 30;
  const int filled =
      total_ > 0 ? static_cast<int>(kWidth * static_cast<double>(done_) / total_) : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  // \x1b[K clears what a longer previous status left behind.
  std::fprintf(out_, "\r[%s] %s\x1b[K", bar.c_str(), status(t).c_str());
  std::fflush(out_);
}

}  // namespace h2oflex::generate
